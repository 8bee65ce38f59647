/*
 * memest.i — the one SWIG interface of libmemest, shared by every SWIG target language
 * (Java today). It wraps memest.h as it is: the structs become classes with getters and
 * setters, the functions become static methods of the module class. Language-specific parts
 * are under #ifdef SWIG<LANG>; a thin hand-written layer per language (java/org/memest/) turns
 * status codes into that language's exceptions.
 */
%module MemestNative

%{
#include <memest/memest.h>
#include <string.h>
%}

%include "stdint.i"
%include "carrays.i"
%include "enumtypeunsafe.swg"  /* enums as plain int constants: the structs hold int32_t */
#ifdef SWIGJAVA
%javaconst(1);
#endif

/* The header's export macro means nothing to SWIG (this only affects SWIG's own parse). */
#define MEMEST_STATIC

/* Short names in the target language: memest_pretrain_request -> PretrainRequest, functions
 * keep their C names without the prefix (MemestNative.pretrain_request_init). */
%rename(Model) memest_model;
%rename(ParamCount) memest_param_count;
%rename(Gpu) memest_gpu;
%rename(ModelStatesRequest) memest_model_states_request;
%rename(ModelStatesResult) memest_model_states_result;
%rename(PretrainRequest) memest_pretrain_request;
%rename(Stage) memest_stage;
%rename(PretrainResult) memest_pretrain_result;
%rename(FinetuneRequest) memest_finetune_request;
%rename(FinetuneParts) memest_finetune_parts;
%rename(FinetuneResult) memest_finetune_result;
%rename(FinetuneOption) memest_finetune_option;
%rename(FinetuneChoice) memest_finetune_choice;
%rename("%(strip:[memest_])s", %$isfunction) "";

/* memest_request_json's char** out-parameter and memest_string_free are replaced by one call
 * that returns the response text (the error document on failure) and the status. */
%ignore memest_request_json;
%ignore memest_string_free;
/* Struct arrays are reached through option(i) below. */
%ignore memest_finetune_choice::options;

%include "memest/memest.h"

/* A stage array for memest_pretrain's out-parameter: new StageArray(n), .cast(), getitem(i). */
%array_class(memest_stage, StageArray);

%extend memest_finetune_choice {
  /* A copy of options[i] (CDP, ZeRO-3, TP, DP+TP); i outside 0..3 gives an inapplicable row. */
  memest_finetune_option option(int i) {
    memest_finetune_option none;
    memset(&none, 0, sizeof none);
    if (i < 0 || i > 3) return none;
    return $self->options[i];
  }
}

%newobject memest_swig_request_json;
%typemap(newfree) char * "memest_string_free($1);";
#ifdef SWIGJAVA
%include "typemaps.i"
%apply int *OUTPUT { int *status };
#endif
%rename(request_json) memest_swig_request_json;
%inline %{
/* Answers a JSON request: returns the response text (NULL only when memory runs out) and
 * stores the memest_status in *status. */
char *memest_swig_request_json(const char *request_json, int *status) {
  char *response = NULL;
  *status = (int)memest_request_json(request_json, &response);
  return response;
}
%}
