"""The package's version, in a module of its own: a leaf that every module may import (the
outputs' markers and the pretraining shards' records write it) without importing the
package's ``__init__``."""

__version__ = "0.1.0"
