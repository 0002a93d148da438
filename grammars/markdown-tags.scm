; Markdown outline: headings. Written for Ephemeral Context; capture names follow
; grammars/README.md. The block grammar nests each ATX heading's section inside its parent's,
; so a heading spans its whole section; a setext heading spans its own lines.

(section
  (atx_heading heading_content: (_) @name.definition.heading)) @definition.heading

(setext_heading heading_content: (paragraph (inline) @name.definition.heading)) @definition.heading
