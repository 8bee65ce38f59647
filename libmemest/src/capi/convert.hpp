// The C API's conversion of a caller's pretraining request to the core's (capi/capi.cpp
// to_core), for the tests that hold it against the JSON reader (test_request_fields.cpp).
// Internal to the library.
#pragma once

#include "memest/memest.h"
#include "plan/requests.hpp"

namespace memest::capi {

// What memest_pretrain reads from `request` (versioned, defaults filled, grad_dtype derived);
// throws memest::Error as the entry point would report it.
PretrainRequest pretrain_request_to_core(const memest_pretrain_request* request);

}  // namespace memest::capi
