; Python definitions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md. Later patterns refine earlier ones for the same name (function ->
; constructor).
; The signature ends at the header's ":" (captured as the body marker), so comments between
; the header and the first statement stay out of it.

; Classes, with their decorators when they have any.
(class_definition
  name: (identifier) @name.definition.class
  ":" @body.definition.class) @definition.class

(decorated_definition
  definition: (class_definition
    name: (identifier) @name.definition.class
    ":" @body.definition.class)) @definition.class

; Functions anywhere (module level or nested in functions).
(function_definition
  name: (identifier) @name.definition.function
  ":" @body.definition.function) @definition.function

(decorated_definition
  definition: (function_definition
    name: (identifier) @name.definition.function
    ":" @body.definition.function)) @definition.function

; A function directly in a class is a method (decided from nesting, see grammars/README.md).
; refine: function in class -> method

; __init__ is the constructor, but only directly in a class: the refine lines below make one
; at module level or nested in a function a plain function.
; refine: constructor in file -> function
; refine: constructor in function -> function
; refine: constructor in method -> function
; refine: constructor in constructor -> function
(function_definition
  name: (identifier) @name.definition.constructor
  ":" @body.definition.constructor
  (#eq? @name.definition.constructor "__init__")) @definition.constructor

(decorated_definition
  definition: (function_definition
    name: (identifier) @name.definition.constructor
    ":" @body.definition.constructor)
  (#eq? @name.definition.constructor "__init__")) @definition.constructor

; Type aliases (`type Point[T] = tuple[T, T]`, Python 3.12).
(type_alias_statement
  left: (type [(identifier) @name.definition.type (generic_type (identifier) @name.definition.type)])) @definition.type

; top-level:
; Patterns below match only at the module's direct children (see grammars/README.md).

; Module-level constants: UPPER_CASE names assigned at the top level.
((expression_statement
  (assignment
    left: (identifier) @name.definition.constant) @definition.constant)
  (#match? @name.definition.constant "^_*[A-Z][A-Z0-9_]*$"))
