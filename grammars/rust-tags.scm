; Rust definitions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md.

; Types.
(struct_item name: (type_identifier) @name.definition.struct) @definition.struct

(union_item name: (type_identifier) @name.definition.union) @definition.union

(enum_item
  name: (type_identifier) @name.definition.enum
  body: (_) @body.definition.enum) @definition.enum

(type_item name: (type_identifier) @name.definition.type) @definition.type

(trait_item
  name: (type_identifier) @name.definition.trait
  body: (_) @body.definition.trait) @definition.trait

(mod_item
  name: (identifier) @name.definition.module
  body: (_) @body.definition.module) @definition.module

(macro_definition name: (identifier) @name.definition.macro) @definition.macro

; An impl block is named after the type it implements, so its methods read `Type.method`.
(impl_item
  type: [
    (type_identifier) @name.definition.impl
    (generic_type type: (type_identifier) @name.definition.impl)
    (scoped_type_identifier name: (type_identifier) @name.definition.impl)
  ]
  body: (_) @body.definition.impl) @definition.impl

; Functions; inside impl and trait bodies they are methods (decided from nesting).
; refine: function in impl -> method
; refine: function in trait -> method
(function_item
  name: (identifier) @name.definition.function
  body: (_) @body.definition.function) @definition.function

(function_signature_item name: (identifier) @name.definition.function) @definition.function

; top-level:
; Patterns below match only at the file's direct children (see grammars/README.md).

; Module-level constants and statics.
[
  (const_item name: (identifier) @name.definition.constant)
  (static_item name: (identifier) @name.definition.constant)
] @definition.constant
