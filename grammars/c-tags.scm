; C definitions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md. cpp-tags.scm inherits these patterns.

; Object-like macros are constants; function-like macros are macros.
(preproc_def name: (identifier) @name.definition.constant value: (_)) @definition.constant

; A macro defined without a value is a constant too (a feature flag), except a header guard:
; `#define RING_H` directly inside `#ifndef RING_H`. At file scope it is matched under
; `; top-level:` below.
[
  (preproc_if (preproc_def name: (identifier) @name.definition.constant !value) @definition.constant)
  (preproc_elif (preproc_def name: (identifier) @name.definition.constant !value) @definition.constant)
  (preproc_else (preproc_def name: (identifier) @name.definition.constant !value) @definition.constant)
]

((preproc_ifdef
  name: (identifier) @_guard
  (preproc_def name: (identifier) @name.definition.constant !value) @definition.constant)
  (#not-eq? @_guard @name.definition.constant))

(preproc_function_def name: (identifier) @name.definition.macro) @definition.macro

; Aggregates with a body (a bare `struct s` is only a use).
(struct_specifier
  name: (type_identifier) @name.definition.struct
  body: (_) @body.definition.struct) @definition.struct

(union_specifier
  name: (type_identifier) @name.definition.union
  body: (_) @body.definition.union) @definition.union

(enum_specifier
  name: (type_identifier) @name.definition.enum
  body: (_) @body.definition.enum) @definition.enum

(type_definition declarator: (type_identifier) @name.definition.type) @definition.type

; Function definitions, returning a value or a pointer.
(function_definition
  declarator: [
    (function_declarator declarator: (identifier) @name.definition.function)
    (pointer_declarator declarator: (function_declarator declarator: (identifier) @name.definition.function))
  ]
  body: (_) @body.definition.function) @definition.function

; Prototypes at file scope (also inside #if blocks): a header's API. Inside a function body
; the same shape is a local variable, so the parent is spelled out.
([
  (translation_unit (declaration declarator: (function_declarator declarator: (identifier) @name.definition.function)) @definition.function)
  (preproc_ifdef (declaration declarator: (function_declarator declarator: (identifier) @name.definition.function)) @definition.function)
  (preproc_if (declaration declarator: (function_declarator declarator: (identifier) @name.definition.function)) @definition.function)
  (preproc_else (declaration declarator: (function_declarator declarator: (identifier) @name.definition.function)) @definition.function)
  (translation_unit (declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name.definition.function))) @definition.function)
  (preproc_ifdef (declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name.definition.function))) @definition.function)
])

; top-level:
; Patterns below match only at the file's direct children (see grammars/README.md).

; File-scope UPPER_CASE variables are constants.
((declaration
  declarator: (init_declarator declarator: (identifier) @name.definition.constant)) @definition.constant
  (#match? @name.definition.constant "^_*[A-Z][A-Z0-9_]*$"))

; A macro without a value at file scope (see the valueless macros above).
(preproc_def name: (identifier) @name.definition.constant !value) @definition.constant
