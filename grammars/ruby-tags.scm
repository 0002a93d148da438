; Ruby definitions for synopses. Written for Ephemeral Context; capture names follow
; grammars/README.md. Methods inside `class << self` read as methods of the class.

; Modules and classes.
(module
  name: [(constant) (scope_resolution)] @name.definition.module) @definition.module

(class
  name: [(constant) (scope_resolution)] @name.definition.class) @definition.class

; A one-line class without a body (`class Error < StandardError; end`): the signature stops
; before `; end`.
(class
  name: [(constant) (scope_resolution)] @name.definition.class
  ";" @body.definition.class) @definition.class

; Methods. `def self.name` is a method of the class like those in `class << self`: its
; `self.` is left out of the signature, the qualified name already shows the class.
(method name: (_) @name.definition.method) @definition.method

(singleton_method
  object: (_) @omit.definition.method
  "." @omit.definition.method
  name: (_) @name.definition.method) @definition.method

(method
  name: (_) @name.definition.method
  body: (_) @body.definition.method) @definition.method

(singleton_method
  object: (_) @omit.definition.method
  "." @omit.definition.method
  name: (_) @name.definition.method
  body: (_) @body.definition.method) @definition.method

; `initialize` is the constructor, but only in a class or module: the refine lines make one
; at file level or nested in a method a plain method.
; refine: constructor in file -> method
; refine: constructor in method -> method
; refine: constructor in constructor -> method
(method
  name: (_) @name.definition.constructor
  (#eq? @name.definition.constructor "initialize")) @definition.constructor

(method
  name: (_) @name.definition.constructor
  body: (_) @body.definition.constructor
  (#eq? @name.definition.constructor "initialize")) @definition.constructor

; Constant assignments (Ruby allows them only outside methods).
(assignment left: (constant) @name.definition.constant) @definition.constant
