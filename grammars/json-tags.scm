; JSON outline: the top-level keys. Written for Ephemeral Context; capture names follow
; grammars/README.md.

; A key without escapes: its text, unquoted.
(document
  (object
    (pair key: (string . (string_content) @name.definition.key .)) @definition.key))

; A key with escapes (`"caf\u00e9"`), whose text the grammar splits around each of them:
; the whole string, quotes included, is its one name.
(document
  (object
    (pair key: (string (escape_sequence)) @name.definition.key) @definition.key))
