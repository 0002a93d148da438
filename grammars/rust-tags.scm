; Rust definitions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md. Later patterns refine earlier ones for the same name (function -> method).

; Module-level constants and statics.
(source_file
  [
    (const_item name: (identifier) @name.definition.constant)
    (static_item name: (identifier) @name.definition.constant)
  ] @definition.constant)

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

; Functions; inside impl and trait bodies they are methods.
(function_item
  name: (identifier) @name.definition.function
  body: (_) @body.definition.function) @definition.function

(impl_item
  body: (declaration_list
    (function_item
      name: (identifier) @name.definition.method
      body: (_) @body.definition.method) @definition.method))

(trait_item
  body: (declaration_list
    (function_item
      name: (identifier) @name.definition.method
      body: (_) @body.definition.method) @definition.method))

(trait_item
  body: (declaration_list
    (function_signature_item name: (identifier) @name.definition.method) @definition.method))
