; Python definitions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md. Later patterns refine earlier ones for the same name (function -> method).
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

; Functions directly in a class body are methods.
(class_definition
  body: (block
    (function_definition
      name: (identifier) @name.definition.method
      ":" @body.definition.method) @definition.method))

(class_definition
  body: (block
    (decorated_definition
      definition: (function_definition
        name: (identifier) @name.definition.method
        ":" @body.definition.method)) @definition.method))

; __init__ is the constructor.
(class_definition
  body: (block
    (function_definition
      name: (identifier) @name.definition.constructor
      ":" @body.definition.constructor) @definition.constructor)
  (#eq? @name.definition.constructor "__init__"))

; Module-level constants: UPPER_CASE names assigned at the top level.
(module
  (expression_statement
    (assignment
      left: (identifier) @name.definition.constant) @definition.constant)
  (#match? @name.definition.constant "^_*[A-Z][A-Z0-9_]*$"))
