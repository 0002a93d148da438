; TOML outline: tables, arrays of tables and top-level keys. Written for Ephemeral Context;
; capture names follow grammars/README.md.

[
  (table [(bare_key) (dotted_key) (quoted_key)] @name.definition.table)
  (table_array_element [(bare_key) (dotted_key) (quoted_key)] @name.definition.table)
] @definition.table

(document
  (pair [(bare_key) (dotted_key) (quoted_key)] @name.definition.key) @definition.key)
