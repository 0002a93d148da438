; Bash definitions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md.

; Functions, with or without the `function` keyword.
(function_definition
  name: (word) @name.definition.function
  body: (_) @body.definition.function) @definition.function

; top-level:
; Patterns below match only at the script's direct children (see grammars/README.md).

; Top-level UPPER_CASE assignments (also `readonly`/`declare -r`) are constants.
((variable_assignment name: (variable_name) @name.definition.constant) @definition.constant
  (#match? @name.definition.constant "^_*[A-Z][A-Z0-9_]*$"))

((declaration_command
  (variable_assignment name: (variable_name) @name.definition.constant)) @definition.constant
  (#match? @name.definition.constant "^_*[A-Z][A-Z0-9_]*$"))
