; Java definitions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md. Annotations are part of a declaration's modifiers, so they show.

; Types.
(class_declaration
  name: (identifier) @name.definition.class
  body: (_) @body.definition.class) @definition.class

(record_declaration
  name: (identifier) @name.definition.class
  body: (_) @body.definition.class) @definition.class

(interface_declaration
  name: (identifier) @name.definition.interface
  body: (_) @body.definition.interface) @definition.interface

(annotation_type_declaration
  name: (identifier) @name.definition.interface
  body: (_) @body.definition.interface) @definition.interface

(enum_declaration
  name: (identifier) @name.definition.enum
  body: (_) @body.definition.enum) @definition.enum

; Methods (with or without a body) and constructors.
(method_declaration name: (identifier) @name.definition.method) @definition.method

(method_declaration
  name: (identifier) @name.definition.method
  body: (block) @body.definition.method) @definition.method

(annotation_type_element_declaration name: (identifier) @name.definition.method) @definition.method

[
  (constructor_declaration name: (identifier) @name.definition.constructor body: (_) @body.definition.constructor)
  (compact_constructor_declaration name: (identifier) @name.definition.constructor body: (_) @body.definition.constructor)
] @definition.constructor

; UPPER_CASE fields are constants.
((field_declaration
  declarator: (variable_declarator name: (identifier) @name.definition.constant)) @definition.constant
  (#match? @name.definition.constant "^_*[A-Z][A-Z0-9_]*$"))

((constant_declaration
  declarator: (variable_declarator name: (identifier) @name.definition.constant)) @definition.constant
  (#match? @name.definition.constant "^_*[A-Z][A-Z0-9_]*$"))
