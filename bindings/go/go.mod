module memest/bindings/go

go 1.19
