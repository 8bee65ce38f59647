"""Python front end of the cross-language test: answers each case with the installed memest
package (memest.request for a dict, memest.request_json for raw text) and prints
"name<TAB>response" lines; a refused request prints the error rebuilt from the MemestError."""
import json
import sys

import memest


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        for line in f:
            name, _, text = line.rstrip("\n").partition("\t")
            try:
                try:
                    req = json.loads(text)
                except ValueError:
                    req = None
                if isinstance(req, dict):
                    out = memest.request(req).to_dict()
                else:
                    out = json.loads(memest.request_json(text))
            except memest.MemestError as e:
                out = {"ok": False, "error": {"code": e.code, "field": e.field, "message": e.message}}
            print(name + "\t" + json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
