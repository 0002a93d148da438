; YAML outline: the top-level keys of each document. Written for Ephemeral Context; capture
; names follow grammars/README.md.

(stream
  (document
    (block_node
      (block_mapping
        (block_mapping_pair key: (_) @name.definition.key) @definition.key))))
