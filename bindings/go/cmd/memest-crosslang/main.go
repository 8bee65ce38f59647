// Command memest-crosslang is the Go front end of tests/crosslang: it answers each line
// "name<TAB>request" with memest.Request (memest.RequestJSON for text that is not a JSON object)
// and prints "name<TAB>response"; a refused request prints the error rebuilt from *memest.Error.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	memest "memest/bindings/go"
)

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		name, text, ok := strings.Cut(scanner.Text(), "\t")
		if !ok {
			continue
		}
		var req map[string]any
		var resp any
		if json.Unmarshal([]byte(text), &req) == nil && req != nil {
			resp, err = memest.Request(req)
		} else {
			var out []byte
			if out, err = memest.RequestJSON([]byte(text)); err == nil {
				err = json.Unmarshal(out, &resp)
			}
		}
		var e *memest.Error
		if errors.As(err, &e) {
			resp = map[string]any{"ok": false, "error": map[string]any{"code": e.Code, "field": e.Field, "message": e.Message}}
		} else if err != nil {
			fmt.Fprintln(os.Stderr, name, err)
			os.Exit(1)
		}
		out, _ := json.Marshal(resp)
		fmt.Printf("%s\t%s\n", name, out)
	}
}
