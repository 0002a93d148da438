; inherits: c
; C++ additions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md.

(namespace_definition
  name: (_) @name.definition.module
  body: (_) @body.definition.module) @definition.module

(class_specifier
  name: (_) @name.definition.class
  body: (_) @body.definition.class) @definition.class

; Prototypes in namespaces.
(namespace_definition
  body: (declaration_list
    (declaration declarator: (function_declarator declarator: (_) @name.definition.function)) @definition.function))

(alias_declaration name: (type_identifier) @name.definition.type) @definition.type

; Templates carry their parameter list into the definition.
(template_declaration
  [
    (class_specifier name: (_) @name.definition.class body: (_) @body.definition.class)
  ]) @definition.class

(template_declaration
  (struct_specifier name: (_) @name.definition.struct body: (_) @body.definition.struct)) @definition.struct

; Functions named by any declarator C++ allows: qualified, operator, destructor, template.
(function_definition
  declarator: [
    (function_declarator declarator: (_) @name.definition.function)
    (pointer_declarator declarator: (function_declarator declarator: (_) @name.definition.function))
    (reference_declarator (function_declarator declarator: (_) @name.definition.function))
  ]
  body: (_) @body.definition.function) @definition.function

(template_declaration
  (function_definition
    declarator: [
      (function_declarator declarator: (_) @name.definition.function)
      (pointer_declarator declarator: (function_declarator declarator: (_) @name.definition.function))
      (reference_declarator (function_declarator declarator: (_) @name.definition.function))
    ]
    body: (_) @body.definition.function)) @definition.function

; Out-of-class definitions `Type::name` are methods.
(function_definition
  declarator: [
    (function_declarator declarator: (qualified_identifier) @name.definition.method)
    (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier) @name.definition.method))
    (reference_declarator (function_declarator declarator: (qualified_identifier) @name.definition.method))
  ]
  body: (_) @body.definition.method) @definition.method

(template_declaration
  (function_definition
    declarator: [
      (function_declarator declarator: (qualified_identifier) @name.definition.method)
      (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier) @name.definition.method))
      (reference_declarator (function_declarator declarator: (qualified_identifier) @name.definition.method))
    ]
    body: (_) @body.definition.method)) @definition.method

; Functions defined or declared in a class or struct body are methods (decided from nesting).
; refine: function in class -> method
; refine: function in struct -> method
(field_declaration declarator: (function_declarator declarator: (_) @name.definition.function)) @definition.function

; A constructor declared in a class body parses as a declaration; elsewhere that shape is
; usually a local variable, so the parent is spelled out.
(field_declaration_list
  (declaration declarator: (function_declarator declarator: (_) @name.definition.function)) @definition.function)
