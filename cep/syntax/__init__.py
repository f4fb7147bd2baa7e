"""Text → syntax tree: the grammar (``grammar.lark``), its parser (``parser``) and the tree of
frozen dataclasses with source spans (``tree``). Only ``parser`` imports lark."""
