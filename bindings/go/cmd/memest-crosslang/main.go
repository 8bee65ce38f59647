// Command memest-crosslang is the Go front end of tests/crosslang: it answers each line
// "name<TAB>request" with memest.Request (memest.RequestJSON for text that is not a JSON object
// a Go map holds faithfully) and prints "name<TAB>response"; a refused request prints the error
// rebuilt from *memest.Error.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	memest "memest/bindings/go"
)

// hasDuplicateKeys reports whether some object of the JSON text holds a key twice (a Go map
// would keep only the last, where the library refuses the text).
func hasDuplicateKeys(text string) bool {
	dec := json.NewDecoder(strings.NewReader(text))
	type frame struct {
		keys     map[string]bool
		isObject bool
		wantKey  bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			return false // not JSON: the caller sends it verbatim anyway
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.isObject && top.wantKey {
			if key, ok := tok.(string); ok {
				if top.keys[key] {
					return true
				}
				top.keys[key] = true
				top.wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, isObject: true, wantKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].isObject {
			stack[len(stack)-1].wantKey = true // a value ended: a key comes next
		}
	}
}

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
		if json.Unmarshal([]byte(text), &req) == nil && req != nil && !hasDuplicateKeys(text) {
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
