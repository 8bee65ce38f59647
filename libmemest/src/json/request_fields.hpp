// The pretraining request's field registry: one row per plain field of the `parallel` and
// `training` blocks (a scalar, a name, a dtype or one of the few shaped values such as
// training.comm_overlap), holding everything the library says about that field in one place:
//
//   - its JSON path ("training.no_sync"), kind and range or choices, and a one-line doc;
//   - how the JSON reader reads it (json/common.cpp read_training, json/pretrain_json.cpp);
//   - its member of the C struct memest_pretrain_request and of the core's PretrainRequest
//     (capi/capi.cpp c_defaults and to_core copy every row with a C member);
//   - its value as a request writes it (mode "fields" lists the defaults);
//   - the CLI flag that sets it, if any.
//
// Mode "fields" answers the table ({"mode": "fields"}); docs/json-reference.md carries it as
// a generated table that tests/unit/test_request_fields.cpp keeps equal to the registry.
// Adding a plain request field is one row here (plus the memest.h member, and the bindings'
// typed structs that mirror it); docs/ARCHITECTURE.md "Adding a request field" says what is
// still by hand. Internal to the library.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/json_fields.hpp"
#include "json/modes.hpp"
#include "memest/memest.h"
#include "plan/requests.hpp"

namespace memest {

enum class FieldKind {
  Boolean,  // true / false (a core value < 0 is "default": the stack decides)
  Integer,  // a JSON integer within [int_min, int_max]
  Number,   // a JSON number within [number_min, number_max]
  Enum,     // a name of `enumeration` (core/enums)
  Dtype,    // a dtype name (fp32, bf16, fp16, fp8), stored as bytes per element
  String,   // a string
  Custom,   // written as `written` says (a list of names, a bool or a name, ...)
};

// How the CLI flag of a row sets it (bindings/cli).
enum class FlagForm {
  None,       // no flag
  Value,      // --flag VALUE
  WhenTrue,   // --flag sets true
  WhenFalse,  // --flag sets false (--no-sp)
  OnOff,      // --flag on|off (a tri-state boolean)
};

struct RequestField {
  const char* path = "";  // "training.no_sync"; the part before the last '.' is its block
  FieldKind kind = FieldKind::Boolean;
  const char* doc = "";
  int64_t int_min = 0, int_max = 0;           // Integer
  double number_min = 0, number_max = 0;      // Number
  memest_enum enumeration = MEMEST_ENUM_COUNT;  // Enum
  const char* written = "";                   // Custom: how its value is written
  const char* cli = "";                       // the CLI flag that sets it ("" when none)
  FlagForm cli_form = FlagForm::None;
  // 0: read with its block; 1: after the precision fields (keeps read_training's order, so a
  // request with several bad fields names the same one first)
  int phase = 0;
  bool echoed = true;  // the pretrain response echoes it (layout.* for parallel.*, training.*)
  ojson example;       // a value other than the default, which the reader takes

  // Reads the field from its block (`block` is the JSON object at parent()).
  std::function<void(const JsonFields& block, PretrainRequest& r)> read;
  // Its value in `r`, as a request writes it (a tri-state's -1 as "default").
  std::function<ojson(const PretrainRequest& r)> value;
  // The C member <-> the core member; empty for a field the C API converts by hand
  // (parallel.pipeline_layout: a borrowed string).
  std::function<void(const memest_pretrain_request& c, PretrainRequest& r)> from_c;
  std::function<void(const PretrainRequest& r, memest_pretrain_request& c)> to_c;

  std::string parent() const;  // "training" for "training.no_sync"
  const char* key() const;     // "no_sync"
};

// Every row, in the order the JSON reader reads them.
const std::vector<RequestField>& pretrain_request_fields();

// Reads the rows of `phase` under `block_path` ("parallel", "training") from `block`, the
// object at that path. A nested block ("training.offload") is read when present, its unknown
// keys refused against its rows.
void read_request_fields(const JsonFields& block, const std::string& block_path, int phase,
                         PretrainRequest& r);

// The C struct's members of every row with one, from the core (c_defaults) and back (to_core).
void request_fields_to_c(const PretrainRequest& r, memest_pretrain_request& c);
void request_fields_from_c(const memest_pretrain_request& c, PretrainRequest& r);

// Mode "fields": every row with its kind, range or choices, default, CLI flag and doc.
ojson fields_mode(const JsonFields& top);
// The rows as the markdown table docs/json-reference.md carries between its
// <!-- request-fields:begin --> and <!-- request-fields:end --> markers.
std::string request_fields_markdown();

}  // namespace memest
