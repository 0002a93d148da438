; Go definitions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md. Later patterns refine earlier ones for the same name (type -> struct).

; Named types; structs and interfaces get their own kind.
(type_spec name: (type_identifier) @name.definition.type) @definition.type

(type_spec
  name: (type_identifier) @name.definition.struct
  type: (struct_type) @body.definition.struct) @definition.struct

(type_spec
  name: (type_identifier) @name.definition.interface
  type: (interface_type) @body.definition.interface) @definition.interface

; Interface methods.
(method_elem name: (field_identifier) @name.definition.method) @definition.method

; Functions.
(function_declaration
  name: (identifier) @name.definition.function
  body: (block) @body.definition.function) @definition.function

; Methods belong to their receiver's type, pointer or not, generic or not. The qualified name
; shows the type, so the receiver is left out of the signature.
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @scope.definition.method
        (pointer_type (type_identifier) @scope.definition.method)
        (generic_type type: (type_identifier) @scope.definition.method)
        (pointer_type (generic_type type: (type_identifier) @scope.definition.method))
      ])) @omit.definition.method
  name: (field_identifier) @name.definition.method
  body: (block) @body.definition.method) @definition.method

; top-level:
; Patterns below match only at the file's direct children (see grammars/README.md).

; Package-level constants.
(const_declaration
  (const_spec name: (identifier) @name.definition.constant) @definition.constant)

; Package-level sentinel errors (`var ErrClosed = errors.New(…)`): constants in all but syntax,
; and part of the package's API.
((var_declaration
  [
    (var_spec name: (identifier) @name.definition.constant value: (_)) @definition.constant
    (var_spec_list (var_spec name: (identifier) @name.definition.constant value: (_)) @definition.constant)
  ])
  (#match? @name.definition.constant "^[Ee]rr[A-Z]"))
