"""State documents (wit/encoded.wit): `States.snapshot_document` hands over exactly the
entries and bytes of `States.snapshot`, and `restore_document` restores as `restore` does.
The host's part is emulated: it encodes a document's decoded values as weirpy's `packb` does
(the Rust tests check that against the real host) and decodes restored ones as `unpackb`."""

import collections
import enum
import pickle
import random
import unittest

import support  # noqa: F401  (sets up the path)

from wit_world.imports import types  # noqa: E402

import nexmark_q17  # noqa: E402
from support import fresh  # noqa: E402
from weirpy import msgpack  # noqa: E402
from weirpy.operator import OperatorBase  # noqa: E402
from weirpy.state import DELETE, PUT, RAW, KeyedState, StateError, States, ValueState  # noqa: E402

PUT_KIND, DELETE_KIND = types.ChangeKind.PUT, types.ChangeKind.DELETE

Pair = collections.namedtuple("Pair", "a b")


class Colour(enum.IntEnum):
    RED = 1


def plain_entries(delta):
    """`(names, [(state, key, value bytes or None)])` of a state-delta."""
    out, pos = [], 0
    for e in delta.entries:
        k = delta.data[pos:pos + e.key_len]
        v = delta.data[pos + e.key_len:pos + e.key_len + e.value_len]
        pos += e.key_len + e.value_len
        out.append((e.state, bytes(k), None if e.kind == DELETE_KIND else bytes(v)))
    return delta.names, out


def document_entries(names, doc):
    """The host's reading of a snapshot document, values encoded as `packb` does."""
    out = []
    for index, kind, items in pickle.loads(doc):
        for item in items:
            if kind == DELETE:
                out.append((index, bytes(item), None))
            else:
                key, value = item
                out.append((index, bytes(key), bytes(value) if kind == RAW else msgpack.packb(value)))
    return names, out


def restore_document(states, delta):
    """The host's restore document of a (puts only) state-delta, as `plan_restore` asks."""
    forms = states.plan_restore(delta.names)
    sections = []
    for state, key, value in plain_entries(delta)[1]:
        kind = PUT if forms[state] else RAW
        item = (key, msgpack.unpackb(value) if kind == PUT else value)
        if sections and sections[-1][:2] == (state, kind):
            sections[-1][2].append(item)
        else:
            sections.append((state, kind, [item]))
    return pickle.dumps(sections, 5)


def make_states():
    """One state of every kind: default codec, checked (`from_plain`/`to_plain`), a custom
    encoding (raw), a value state."""
    return States(
        KeyedState("plain"),
        KeyedState("checked", to_plain=lambda p: [p.a, p.b], from_plain=lambda v: Pair(*v)),
        KeyedState("custom", encode=lambda v: b"!" + msgpack.packb(v), decode=lambda b: msgpack.unpackb(b[1:])),
        ValueState("value"),
    )


def random_value(rng):
    return rng.choice([
        None, True, False, 0, -1, 127, 128, -33, 2**63, 2**64 - 1, -2**63, 1.5, -0.0, float("inf"), "", "é流",
        "x" * 40, b"", b"\x00\xff", [1, [2, None]], (3, "t"), {"k": 1, 2: [3.25], (1, 2): {}}, {b"bin": "v"},
    ])


def mutate(rng, states):
    plain, checked, custom, value = (states._by_name[n] for n in ("plain", "checked", "custom", "value"))
    for _ in range(rng.randrange(0, 30)):
        k = msgpack.packb(rng.randrange(12))
        op = rng.randrange(8)
        if op < 3:
            plain.put(k, random_value(rng))
        elif op == 3:
            plain.remove(k)
        elif op == 4:
            checked.put(k, Pair(rng.randrange(100), random_value(rng)))
        elif op == 5:
            checked.remove(k) if rng.random() < 0.5 else custom.put(k, random_value(rng))
        elif op == 6:
            custom.remove(k)
        else:
            value.clear() if rng.random() < 0.3 else value.set(random_value(rng))


class StateDocumentTest(unittest.TestCase):
    def test_documents_hand_over_the_plain_snapshot_entries(self):
        seed = random.randrange(1 << 30)
        for trial in range(40):
            rng_a, rng_b = random.Random(seed + trial), random.Random(seed + trial)
            fast, plain = make_states(), make_states()
            for step in range(6):
                mutate(rng_a, fast)
                mutate(rng_b, plain)
                full = step == 5
                names, doc = fast.snapshot_document(full)
                self.assertEqual(document_entries(names, doc), plain_entries(plain.snapshot(full)),
                                 "seed %d, trial %d, step %d" % (seed, trial, step))

    def test_values_of_other_types_fall_back_to_packb(self):
        for value in (Pair(1, "x"), Colour.RED, [Colour.RED, {"k": Pair(2, 3)}]):
            fast, plain = States(KeyedState("s")), States(KeyedState("s"))
            for states in (fast, plain):
                states._by_name["s"].put(b"\x01", value)
            names, doc = fast.snapshot_document(False)
            self.assertEqual([kind for _, kind, _ in pickle.loads(doc)], [RAW])
            self.assertEqual(document_entries(names, doc), plain_entries(plain.snapshot(False)))

    def test_restore_documents_restore_as_plain_chunks(self):
        seed = random.randrange(1 << 30)
        rng = random.Random(seed)
        source = make_states()
        for _ in range(5):
            mutate(rng, source)
        delta = source.snapshot(True)
        fast, plain = make_states(), make_states()
        fast.restore_document(delta.names, restore_document(fast, delta))
        plain.restore(delta)
        for name in ("plain", "checked", "custom"):
            self.assertEqual(dict(fast._by_name[name].items()), dict(plain._by_name[name].items()), "seed %d" % seed)
        self.assertEqual(fast._by_name["value"].get(), plain._by_name["value"].get())
        self.assertEqual(plain_entries(fast.snapshot(True)), plain_entries(delta))
        # Restored keys are held: removing one writes a delete on both paths.
        for states in (fast, plain):
            for k, _ in list(states._by_name["plain"].items())[:1]:
                states._by_name["plain"].remove(k)
        names, doc = fast.snapshot_document(False)
        self.assertEqual(document_entries(names, doc), plain_entries(plain.snapshot(False)))

    def test_plans_and_refusals(self):
        states = make_states()
        self.assertEqual(states.plan_restore(["custom", "plain", "value"]), [False, True, True])
        self.assertIsNone(states.plan_restore(["plain", "unknown"]))
        bad = pickle.dumps([(0, PUT, [(b"\x01", [1, -2])])], 5)
        q17 = States(KeyedState("stats", from_plain=nexmark_q17.stats_from_plain))
        with self.assertRaises(StateError) as fast_error:
            q17.restore_document(["stats"], bad)
        with self.assertRaises(StateError) as plain_error:
            q17.restore(types.StateDelta(names=["stats"], data=b"\x01\x92\x01\xfe", entries=[
                types.StateEntry(state=0, kind=PUT_KIND, key_len=1, value_len=3)]))
        self.assertEqual(str(fast_error.exception), str(plain_error.exception))
        with self.assertRaises(ValueError):
            KeyedState("both", encode=repr, from_plain=list)

    def test_the_operator_uses_documents_unless_it_overrides_snapshot_or_restore(self):
        op = fresh(nexmark_q17)
        op.process(0, _bids((5, 100), (6, 2_000_000)))
        delta = op.snapshot_encoded(1, False)
        self.assertEqual(delta.names, ["stats"])
        self.assertEqual(len(pickle.loads(delta.doc)[0][2]), 2)
        self.assertIsNone(op.plan_restore(op.STATE_VERSION + 1, ["stats"]))
        self.assertEqual(len(op.plan_restore(op.STATE_VERSION, ["stats"]).forms), 1)

        class Custom(OperatorBase):
            def snapshot(self, checkpoint_id, full):
                return self.states.snapshot(full)

            def restore(self, state_version, chunk):
                self.states.restore(chunk)

        custom = Custom()
        self.assertIsNone(custom.snapshot_encoded(1, False))
        self.assertIsNone(custom.plan_restore(0, []))


def _bids(*pairs):
    from support import batch
    return batch(*[(a, {"auction": a, "price": p}, i) for i, (a, p) in enumerate(pairs)])


if __name__ == "__main__":
    unittest.main()
