; JavaScript definitions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md. typescript-tags.scm inherits these patterns, so they use only node
; types both grammars share. Later patterns refine earlier ones for the same name.

; Classes, declared or as named class expressions; `export` belongs to the definition.
[
  (class_declaration name: (_) @name.definition.class body: (_) @body.definition.class)
  (class name: (_) @name.definition.class body: (_) @body.definition.class)
] @definition.class

(export_statement
  declaration: (class_declaration
    name: (_) @name.definition.class
    body: (_) @body.definition.class)) @definition.class

; Functions and generators, declared or as named function expressions.
[
  (function_declaration name: (identifier) @name.definition.function body: (_) @body.definition.function)
  (generator_function_declaration name: (identifier) @name.definition.function body: (_) @body.definition.function)
  (function_expression name: (identifier) @name.definition.function body: (_) @body.definition.function)
] @definition.function

(export_statement
  declaration: [
    (function_declaration name: (identifier) @name.definition.function body: (_) @body.definition.function)
    (generator_function_declaration name: (identifier) @name.definition.function body: (_) @body.definition.function)
  ]) @definition.function

; Variables bound to arrow functions or function expressions are functions.
(variable_declarator
  name: (identifier) @name.definition.function
  value: [
    (arrow_function body: (_) @body.definition.function)
    (function_expression body: (_) @body.definition.function)
  ]) @definition.function

; Exported, such a variable keeps its `export`; `const` only repeats what the kind says.
(export_statement
  declaration: (lexical_declaration
    ["const" "let"] @omit.definition.function
    (variable_declarator
      name: (identifier) @name.definition.function
      value: [
        (arrow_function body: (_) @body.definition.function)
        (function_expression body: (_) @body.definition.function)
      ]))) @definition.function

; Class fields bound to arrow functions or function expressions are methods. The node is
; named by its fields only (`field_definition` exists in JavaScript, not TypeScript, which
; has its own pattern).
(_
  property: (property_identifier) @name.definition.method
  value: [
    (arrow_function body: (_) @body.definition.method)
    (function_expression body: (_) @body.definition.method)
  ]) @definition.method

; Object properties bound to arrow functions or function expressions are functions (an
; API client's or a store's table of calls), as in tree-sitter-javascript's own tags query.
(pair
  key: (property_identifier) @name.definition.function
  value: [
    (arrow_function body: (_) @body.definition.function)
    (function_expression body: (_) @body.definition.function)
  ]) @definition.function

; Methods in class bodies; `constructor` is the constructor.
(method_definition
  name: (_) @name.definition.method
  body: (_) @body.definition.method) @definition.method

(method_definition
  name: (_) @name.definition.constructor
  body: (_) @body.definition.constructor
  (#eq? @name.definition.constructor "constructor")) @definition.constructor

; top-level:
; Patterns below match only at the program's direct children (see grammars/README.md).

; Top-level UPPER_CASE bindings are constants.
((lexical_declaration
  (variable_declarator name: (identifier) @name.definition.constant) @definition.constant)
  (#match? @name.definition.constant "^_*[A-Z][A-Z0-9_]*$"))

((export_statement
  declaration: (lexical_declaration
    (variable_declarator name: (identifier) @name.definition.constant))) @definition.constant
  (#match? @name.definition.constant "^_*[A-Z][A-Z0-9_]*$"))
