; PHP definitions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md.

(namespace_definition name: (namespace_name) @name.definition.module) @definition.module

(class_declaration
  name: (name) @name.definition.class
  body: (_) @body.definition.class) @definition.class

(interface_declaration
  name: (name) @name.definition.interface
  body: (_) @body.definition.interface) @definition.interface

(trait_declaration
  name: (name) @name.definition.trait
  body: (_) @body.definition.trait) @definition.trait

(enum_declaration
  name: (name) @name.definition.enum
  body: (_) @body.definition.enum) @definition.enum

(function_definition
  name: (name) @name.definition.function
  body: (_) @body.definition.function) @definition.function

; Methods, abstract or not; __construct is the constructor.
(method_declaration name: (name) @name.definition.method) @definition.method

(method_declaration
  name: (name) @name.definition.method
  body: (_) @body.definition.method) @definition.method

(method_declaration
  name: (name) @name.definition.constructor
  body: (_) @body.definition.constructor
  (#eq? @name.definition.constructor "__construct")) @definition.constructor

; `const` at file or class level.
(const_declaration (const_element (name) @name.definition.constant)) @definition.constant
