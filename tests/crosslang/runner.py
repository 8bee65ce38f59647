"""Python front end of the cross-language test: answers each case with the installed memest
package (memest.request for a dict, memest.request_json for raw text) and prints
"name<TAB>response" lines; a refused request prints the error rebuilt from the MemestError.

Text goes to memest.request as a dict only when a dict holds it faithfully: no key twice in an
object (a dict keeps the last) and no number past a double's range (Python reads 1e999 as
infinity); the library refuses such text, so it is sent verbatim with memest.request_json."""
import json
import math
import sys

import memest


class NotFaithful(ValueError):
    """The text means something a dict cannot hold."""


def _pairs(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise NotFaithful("duplicate key")
    return dict(pairs)


def _float(text):
    value = float(text)
    if not math.isfinite(value):
        raise NotFaithful(f"{text} is past a double's range")
    return value


def _constant(name):
    raise NotFaithful(f"{name} is not JSON")


def strict_loads(text):
    return json.loads(text, object_pairs_hook=_pairs, parse_float=_float, parse_constant=_constant)


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        for line in f:
            name, _, text = line.rstrip("\n").partition("\t")
            try:
                try:
                    req = strict_loads(text)
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
