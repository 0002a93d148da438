; inherits: javascript
; TypeScript additions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md. tsx-tags.scm inherits this file.

; Interfaces, type aliases, enums and namespaces.
(interface_declaration
  name: (_) @name.definition.interface
  body: (_) @body.definition.interface) @definition.interface

(type_alias_declaration name: (_) @name.definition.type) @definition.type

(enum_declaration
  name: (_) @name.definition.enum
  body: (_) @body.definition.enum) @definition.enum

[
  (internal_module name: (_) @name.definition.module body: (_) @body.definition.module)
  (module name: (_) @name.definition.module body: (_) @body.definition.module)
] @definition.module

(abstract_class_declaration
  name: (_) @name.definition.class
  body: (_) @body.definition.class) @definition.class

; `export` belongs to the definition.
(export_statement
  declaration: [
    (interface_declaration name: (_) @name.definition.interface body: (_) @body.definition.interface)
  ]) @definition.interface

(export_statement
  declaration: (type_alias_declaration name: (_) @name.definition.type)) @definition.type

(export_statement
  declaration: (enum_declaration
    name: (_) @name.definition.enum
    body: (_) @body.definition.enum)) @definition.enum

(export_statement
  declaration: (abstract_class_declaration
    name: (_) @name.definition.class
    body: (_) @body.definition.class)) @definition.class

; Overload and ambient signatures of functions.
(function_signature name: (_) @name.definition.function) @definition.function

(export_statement
  declaration: (function_signature name: (_) @name.definition.function)) @definition.function

; Method signatures in interfaces and abstract classes.
[
  (method_signature name: (_) @name.definition.method)
  (abstract_method_signature name: (_) @name.definition.method)
] @definition.method

; Class fields bound to arrow functions or function expressions are methods.
(public_field_definition
  name: (property_identifier) @name.definition.method
  value: [
    (arrow_function body: (_) @body.definition.method)
    (function_expression body: (_) @body.definition.method)
  ]) @definition.method

; A constructor's overload or ambient signature (`constructor(id: string);` in a .d.ts class);
; in an interface a member named constructor is an ordinary method.
; refine: constructor in interface -> method
(method_signature
  name: (_) @name.definition.constructor
  (#eq? @name.definition.constructor "constructor")) @definition.constructor

; top-level:
; Patterns below match only at the program's direct children (see grammars/README.md).

; UPPER_CASE ambient constants (`export declare const MAX: number;` in a .d.ts file).
((export_statement
  declaration: (ambient_declaration
    (lexical_declaration
      (variable_declarator name: (identifier) @name.definition.constant)))) @definition.constant
  (#match? @name.definition.constant "^_*[A-Z][A-Z0-9_]*$"))

((ambient_declaration
  (lexical_declaration
    (variable_declarator name: (identifier) @name.definition.constant))) @definition.constant
  (#match? @name.definition.constant "^_*[A-Z][A-Z0-9_]*$"))
