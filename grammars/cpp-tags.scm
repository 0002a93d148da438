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
  (class_specifier name: (_) @name.definition.class body: (_) @body.definition.class)) @definition.class

(template_declaration
  (struct_specifier name: (_) @name.definition.struct body: (_) @body.definition.struct)) @definition.struct

; Functions named by a plain, operator, destructor or template declarator (a qualified one,
; `Type::name`, is a method below).
(function_definition
  declarator: [
    (function_declarator declarator: [(identifier) (field_identifier) (operator_name) (destructor_name) (template_function)] @name.definition.function)
    (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier) (operator_name) (destructor_name) (template_function)] @name.definition.function))
    (reference_declarator (function_declarator declarator: [(identifier) (field_identifier) (operator_name) (destructor_name) (template_function)] @name.definition.function))
  ]
  body: (_) @body.definition.function) @definition.function

(template_declaration
  (function_definition
    declarator: [
      (function_declarator declarator: [(identifier) (field_identifier) (operator_name) (destructor_name) (template_function)] @name.definition.function)
      (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier) (operator_name) (destructor_name) (template_function)] @name.definition.function))
      (reference_declarator (function_declarator declarator: [(identifier) (field_identifier) (operator_name) (destructor_name) (template_function)] @name.definition.function))
    ]
    body: (_) @body.definition.function)) @definition.function

; Out-of-class definitions `Type::name` are methods of Type: the scope is the owner (so the
; qualified name reads `Type.name`) and `Type::` is left out of the signature.
(function_definition
  declarator: [
    (function_declarator declarator: (qualified_identifier
      scope: [(namespace_identifier) @scope.definition.method (template_type name: (_) @scope.definition.method)] @omit.definition.method
      "::" @omit.definition.method
      name: (_) @name.definition.method))
    (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier
      scope: [(namespace_identifier) @scope.definition.method (template_type name: (_) @scope.definition.method)] @omit.definition.method
      "::" @omit.definition.method
      name: (_) @name.definition.method)))
    (reference_declarator (function_declarator declarator: (qualified_identifier
      scope: [(namespace_identifier) @scope.definition.method (template_type name: (_) @scope.definition.method)] @omit.definition.method
      "::" @omit.definition.method
      name: (_) @name.definition.method)))
  ]
  body: (_) @body.definition.method) @definition.method

(template_declaration
  (function_definition
    declarator: [
      (function_declarator declarator: (qualified_identifier
        scope: [(namespace_identifier) @scope.definition.method (template_type name: (_) @scope.definition.method)] @omit.definition.method
        "::" @omit.definition.method
        name: (_) @name.definition.method))
      (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier
        scope: [(namespace_identifier) @scope.definition.method (template_type name: (_) @scope.definition.method)] @omit.definition.method
        "::" @omit.definition.method
        name: (_) @name.definition.method)))
      (reference_declarator (function_declarator declarator: (qualified_identifier
        scope: [(namespace_identifier) @scope.definition.method (template_type name: (_) @scope.definition.method)] @omit.definition.method
        "::" @omit.definition.method
        name: (_) @name.definition.method)))
    ]
    body: (_) @body.definition.method)) @definition.method

; An out-of-class constructor `Type::Type(…) : member(…)`: no return type, the name repeats
; the scope; the member initializer list is left out of the signature.
((function_definition
  !type
  declarator: (function_declarator declarator: (qualified_identifier
    scope: [(namespace_identifier) @scope.definition.constructor (template_type name: (_) @scope.definition.constructor)] @omit.definition.constructor
    "::" @omit.definition.constructor
    name: (identifier) @name.definition.constructor))
  (field_initializer_list)? @omit.definition.constructor
  body: (_) @body.definition.constructor) @definition.constructor
  (#eq? @scope.definition.constructor @name.definition.constructor))

((template_declaration
  (function_definition
    !type
    declarator: (function_declarator declarator: (qualified_identifier
      scope: [(namespace_identifier) @scope.definition.constructor (template_type name: (_) @scope.definition.constructor)] @omit.definition.constructor
      "::" @omit.definition.constructor
      name: (identifier) @name.definition.constructor))
    (field_initializer_list)? @omit.definition.constructor
    body: (_) @body.definition.constructor)) @definition.constructor
  (#eq? @scope.definition.constructor @name.definition.constructor))

; Functions defined or declared in a class or struct body are methods (decided from nesting).
; refine: function in class -> method
; refine: function in struct -> method
(field_declaration
  declarator: [
    (function_declarator declarator: (_) @name.definition.function)
    (pointer_declarator declarator: (function_declarator declarator: (_) @name.definition.function))
    (reference_declarator (function_declarator declarator: (_) @name.definition.function))
  ]) @definition.function

; A constructor declared in a class body parses as a declaration; elsewhere that shape is
; usually a local variable, so the parent is spelled out.
(field_declaration_list
  (declaration declarator: (function_declarator declarator: (_) @name.definition.function)) @definition.function)

; With no return type and a plain name, that declaration is a constructor.
(field_declaration_list
  (declaration
    !type
    declarator: (function_declarator declarator: (identifier) @name.definition.constructor)) @definition.constructor)

; Defaulted and deleted members (`~Matrix() = default;`, `Matrix(const Matrix&) = delete;`).
(field_declaration_list
  (function_definition
    declarator: [
      (function_declarator declarator: (_) @name.definition.function)
      (pointer_declarator declarator: (function_declarator declarator: (_) @name.definition.function))
      (reference_declarator (function_declarator declarator: (_) @name.definition.function))
    ]
    [(default_method_clause) (delete_method_clause)]) @definition.function)

; Constructors in a class body, with a body or defaulted or deleted: no return type and a
; plain name (destructors stay methods). The member initializer list is left out of the
; signature.
(field_declaration_list
  (function_definition
    !type
    declarator: (function_declarator declarator: (identifier) @name.definition.constructor)
    (field_initializer_list)? @omit.definition.constructor
    [body: (_) @body.definition.constructor (default_method_clause) (delete_method_clause)]) @definition.constructor)

; constexpr and const members with a value are constants.
((field_declaration
  (type_qualifier) @_qualifier
  declarator: (field_identifier) @name.definition.constant
  default_value: (_)) @definition.constant
  (#any-of? @_qualifier "constexpr" "const"))

; constexpr and const variables in a namespace are constants.
((declaration_list
  (declaration
    (type_qualifier) @_qualifier
    declarator: (init_declarator declarator: (identifier) @name.definition.constant)) @definition.constant)
  (#any-of? @_qualifier "constexpr" "const"))

; top-level:
; Patterns below match only at the file's direct children (see grammars/README.md).

; constexpr and const variables at file scope are constants, whatever their case.
((declaration
  (type_qualifier) @_qualifier
  declarator: (init_declarator declarator: (identifier) @name.definition.constant)) @definition.constant
  (#any-of? @_qualifier "constexpr" "const"))
