/*
 * memest.i — the one SWIG interface of libmemest, shared by every SWIG target language
 * (Java today). It wraps memest.h as it is: the structs become classes with getters and
 * setters, the functions become static methods of the module class. Language-specific parts
 * are under #ifdef SWIG<LANG>; a thin hand-written layer per language (java/org/memest/) turns
 * status codes into that language's exceptions.
 *
 * The versioned structs: a struct created from the target language is already sized
 * (struct_size = sizeof, as this wrapper was compiled against memest.h), and a request
 * already holds the library's defaults (its _init function runs in the constructor). The
 * model, GPU, base request and shortlist a request points at are kept alive by the request's
 * proxy object for as long as the request is (setModel, setGpu, setBase, setLayouts).
 */
%module MemestNative

%{
#include <memest/memest.h>
#include <stdlib.h>
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
%rename(Layout) memest_layout;
%rename(SearchRequest) memest_search_request;
%rename(SearchEntry) memest_search_entry;
%rename(SearchResult) memest_search_result;
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

/* Sized structs: the constructor sets struct_size (results, models and GPUs the library fills). */
%define MEMEST_SIZED(TYPE)
%extend TYPE {
  TYPE() {
    TYPE *p = (TYPE *)calloc(1, sizeof(TYPE));
    if (p) p->struct_size = (uint32_t)sizeof(TYPE);
    return p;
  }
  ~TYPE() { free($self); }
}
%enddef

/* Requests: the constructor fills the library's defaults with the struct's _init function. */
%define MEMEST_REQUEST(TYPE, INIT)
%extend TYPE {
  TYPE() {
    TYPE *p = (TYPE *)calloc(1, sizeof(TYPE));
    if (p && INIT(p, (uint32_t)sizeof(TYPE)) != MEMEST_OK) {
      free(p);
      return NULL;
    }
    return p;
  }
  ~TYPE() { free($self); }
}
%enddef

MEMEST_SIZED(memest_model)
MEMEST_SIZED(memest_param_count)
MEMEST_SIZED(memest_gpu)
MEMEST_SIZED(memest_model_states_result)
MEMEST_SIZED(memest_stage)
MEMEST_SIZED(memest_pretrain_result)
MEMEST_SIZED(memest_search_entry)
MEMEST_SIZED(memest_search_result)
MEMEST_SIZED(memest_finetune_result)
MEMEST_SIZED(memest_finetune_option)
MEMEST_SIZED(memest_finetune_choice)
MEMEST_REQUEST(memest_model_states_request, memest_model_states_request_init)
/* The pretrain request owns its pipeline_layout (1.7, const char *): the setter frees the
 * copy it made before and stores a malloc'ed copy of the new string (null: none), and the
 * destructor frees it. SWIG's own const char * setter would copy without ever freeing. The
 * request's init leaves it NULL and the library only reads it during a call, so every
 * non-NULL value here is this wrapper's own copy. */
%typemap(memberin) const char *pipeline_layout {
  free((char *)$1);
  $1 = NULL;
  if ($input) {
    char *copy = (char *)malloc(strlen((const char *)$input) + 1);
    if (copy) strcpy(copy, (const char *)$input);
    $1 = copy;
  }
}
%extend memest_pretrain_request {
  memest_pretrain_request() {
    memest_pretrain_request *p = (memest_pretrain_request *)calloc(1, sizeof(memest_pretrain_request));
    if (p && memest_pretrain_request_init(p, (uint32_t)sizeof(memest_pretrain_request)) != MEMEST_OK) {
      free(p);
      return NULL;
    }
    return p;
  }
  ~memest_pretrain_request() {
    free((char *)$self->pipeline_layout);
    free($self);
  }
}
MEMEST_REQUEST(memest_layout, memest_layout_init)
MEMEST_REQUEST(memest_search_request, memest_search_request_init)
MEMEST_REQUEST(memest_finetune_request, memest_finetune_request_init)

#ifdef SWIGJAVA
/* Pointer members (a request's model, GPU, base request, shortlist): the generated accessors
 * are renamed *_pointer and made private; public setters keep the Java object they were given,
 * so the C memory the request points at lives as long as the request's proxy object. */
%rename(model_pointer) memest_model_states_request::model;
%rename(gpu_pointer) memest_model_states_request::gpu;
%rename(model_pointer) memest_pretrain_request::model;
%rename(gpu_pointer) memest_pretrain_request::gpu;
%rename(model_pointer) memest_finetune_request::model;
%rename(gpu_pointer) memest_finetune_request::gpu;
%rename(base_pointer) memest_search_request::base;
%rename(layouts_pointer) memest_search_request::layouts;
%javamethodmodifiers memest_model_states_request::model "private";
%javamethodmodifiers memest_model_states_request::gpu "private";
%javamethodmodifiers memest_pretrain_request::model "private";
%javamethodmodifiers memest_pretrain_request::gpu "private";
%javamethodmodifiers memest_finetune_request::model "private";
%javamethodmodifiers memest_finetune_request::gpu "private";
%javamethodmodifiers memest_search_request::base "private";
%javamethodmodifiers memest_search_request::layouts "private";

%define MEMEST_KEEP_MODEL_AND_GPU(TYPE)
%typemap(javacode) struct TYPE %{
  private Model modelKept;
  private Gpu gpuKept;
  /** Points the request at a model (kept alive with the request; null for none). */
  public void setModel(Model model) {
    modelKept = model;
    setModel_pointer(model);
  }
  /** The model this request points at. */
  public Model getModel() { return modelKept; }
  /** Points the request at a GPU (kept alive with the request; null for none). */
  public void setGpu(Gpu gpu) {
    gpuKept = gpu;
    setGpu_pointer(gpu);
  }
  /** The GPU this request points at. */
  public Gpu getGpu() { return gpuKept; }
%}
%enddef
MEMEST_KEEP_MODEL_AND_GPU(memest_model_states_request)
MEMEST_KEEP_MODEL_AND_GPU(memest_pretrain_request)
MEMEST_KEEP_MODEL_AND_GPU(memest_finetune_request)

%typemap(javacode) struct memest_search_request %{
  private PretrainRequest baseKept;
  private LayoutArray layoutsKept;
  /** Points the search at its base request (model, GPU, GPUs, training; kept alive). */
  public void setBase(PretrainRequest base) {
    baseKept = base;
    setBase_pointer(base);
  }
  /** The base request this search points at. */
  public PretrainRequest getBase() { return baseKept; }
  /** Ranks exactly the first `count` layouts of `layouts` (each set from a new Layout(), which
   *  carries its struct_size), or enumerates the space again with (null, 0). Kept alive. */
  public void setLayouts(LayoutArray layouts, long count) {
    layoutsKept = layouts;
    setLayouts_pointer(layouts == null ? null : layouts.cast());
    setLayout_count(layouts == null ? 0 : count);
  }
%}
#endif

%include "memest/memest.h"

/* Caller arrays for memest_pretrain (stages), memest_search (entries, prune counts, an explicit
 * shortlist) and memest_finetune_select (options): new StageArray(n), .cast(), getitem(i)
 * (a copy), setitem(i, x). */
%array_class(memest_stage, StageArray);
%array_class(memest_search_entry, SearchEntryArray);
%array_class(memest_layout, LayoutArray);
%array_class(memest_finetune_option, FinetuneOptionArray);
%array_class(uint64_t, CountArray);

%inline %{
/* The element sizes the array calls take (sizeof as this wrapper was compiled). */
uint32_t memest_swig_stage_size(void) { return (uint32_t)sizeof(memest_stage); }
uint32_t memest_swig_search_entry_size(void) { return (uint32_t)sizeof(memest_search_entry); }
uint32_t memest_swig_finetune_option_size(void) { return (uint32_t)sizeof(memest_finetune_option); }
%}

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
