; Ruby definitions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md. Methods inside `class << self` read as methods of the class.

(module
  name: [(constant) (scope_resolution)] @name.definition.module) @definition.module

(class
  name: [(constant) (scope_resolution)] @name.definition.class) @definition.class

[
  (method name: (_) @name.definition.method)
  (singleton_method name: (_) @name.definition.method)
] @definition.method

(method
  name: (_) @name.definition.method
  body: (_) @body.definition.method) @definition.method

(singleton_method
  name: (_) @name.definition.method
  body: (_) @body.definition.method) @definition.method

(method
  name: (_) @name.definition.constructor
  (#eq? @name.definition.constructor "initialize")) @definition.constructor

(method
  name: (_) @name.definition.constructor
  body: (_) @body.definition.constructor
  (#eq? @name.definition.constructor "initialize")) @definition.constructor

; Constant assignments (Ruby allows them only outside methods).
(assignment left: (constant) @name.definition.constant) @definition.constant
