"""A conversation's turns as a tree, and the one path of it that is active.

Pure functions over the turns one read of a conversation returns: which
leaf is active, the path to it, each turn's siblings, and what lies below a
turn. Ids grow with time, so "newest" is the highest id and a parent's id
is always lower than its children's: the newest turn is always a leaf.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.store.models import StoredTurn


@dataclass(slots=True)
class ChosenLeaf:
    """A leaf chosen by a switch or a deletion, and the newest turn when it was."""

    leaf_id: int
    newest_id: int


@dataclass(slots=True)
class ConversationTree:
    turns: list[StoredTurn]
    """Every turn, oldest first."""
    chosen: ChosenLeaf | None = None
    _by_id: dict[int, StoredTurn] = field(init=False, repr=False)
    _children: dict[int | None, list[int]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {turn.id: turn for turn in self.turns if turn.id is not None}
        self._children = {}
        for turn_id, turn in self._by_id.items():
            self._children.setdefault(self._parent(turn), []).append(turn_id)

    def __contains__(self, turn_id: int) -> bool:
        return turn_id in self._by_id

    @property
    def newest_id(self) -> int | None:
        return max(self._by_id, default=None)

    @property
    def leaf_id(self) -> int | None:
        """The chosen leaf while no newer turn came (a new turn follows it, so becomes it)."""
        newest = self.newest_id
        chosen = self.chosen
        if chosen is None or newest is None or chosen.newest_id < newest:
            return newest
        return chosen.leaf_id if chosen.leaf_id in self._by_id else newest

    def path(self, leaf_id: int | None = None) -> list[StoredTurn]:
        """Root to `leaf_id` (the active leaf by default)."""
        turn_id = self.leaf_id if leaf_id is None else leaf_id
        path: list[StoredTurn] = []
        while turn_id is not None and (turn := self._by_id.get(turn_id)) is not None:
            path.append(turn)
            turn_id = self._parent(turn)
        path.reverse()
        return path

    def parent_of(self, turn_id: int) -> int | None:
        return self._parent(self._by_id[turn_id])

    def siblings(self, turn_id: int) -> list[int]:
        """The turns with the same parent, oldest first, `turn_id` included."""
        return sorted(self._children.get(self.parent_of(turn_id), []))

    def newest_leaf(self, turn_id: int) -> int:
        """The leaf reached from `turn_id` by the newest child at each step."""
        while children := self._children.get(turn_id):
            turn_id = max(children)
        return turn_id

    def below(self, turn_id: int) -> list[int]:
        """`turn_id` and every turn under it."""
        found, todo = [], [turn_id]
        while todo:
            current = todo.pop()
            found.append(current)
            todo.extend(self._children.get(current, []))
        return sorted(found)

    def _parent(self, turn: StoredTurn) -> int | None:
        """A parent that is gone (deleted under a rollback) makes the turn a root."""
        return turn.parent_id if turn.parent_id in self._by_id else None
