; JSON outline: the top-level keys. Written for Ephemeral Context; capture names follow
; grammars/README.md.

(document
  (object
    (pair key: (string (string_content) @name.definition.key)) @definition.key))
