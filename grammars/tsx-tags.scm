; inherits: typescript
; TSX uses the TypeScript patterns unchanged (the grammars differ only in JSX).
