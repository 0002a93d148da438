; C# definitions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md. Attributes belong to a declaration, so they show in its signature.

[
  (namespace_declaration name: (_) @name.definition.module body: (_) @body.definition.module)
  (file_scoped_namespace_declaration name: (_) @name.definition.module)
] @definition.module

(class_declaration
  name: (identifier) @name.definition.class
  body: (_) @body.definition.class) @definition.class

(record_declaration name: (identifier) @name.definition.class) @definition.class

(struct_declaration
  name: (identifier) @name.definition.struct
  body: (_) @body.definition.struct) @definition.struct

(interface_declaration
  name: (identifier) @name.definition.interface
  body: (_) @body.definition.interface) @definition.interface

(enum_declaration
  name: (identifier) @name.definition.enum
  body: (_) @body.definition.enum) @definition.enum

(delegate_declaration name: (identifier) @name.definition.type) @definition.type

; Methods and constructors, with a block body, an expression body or none (interfaces).
(method_declaration name: (identifier) @name.definition.method) @definition.method

(method_declaration
  name: (identifier) @name.definition.method
  body: (_) @body.definition.method) @definition.method

(constructor_declaration
  name: (identifier) @name.definition.constructor
  body: (_) @body.definition.constructor) @definition.constructor

; `const` fields are constants.
((field_declaration
  (modifier) @_const
  (variable_declaration
    (variable_declarator name: (identifier) @name.definition.constant))) @definition.constant
  (#eq? @_const "const"))
