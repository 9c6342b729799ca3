"""Word count in Python: a keyed, stateful operator, equivalent to examples/wordcount (Rust).

Input: records keyed by a word (MessagePack str) whose value is an increment (MessagePack
uint), as the tokenizer emits them. State: the running count of every word, in the keyed
state "counts" (key = the record's key bytes, value = MessagePack uint), state version 0.
Output: per input batch, one record per distinct word of the batch in first-seen order:
key = the word, value = its new total (uint), timestamp = the latest timestamp of that
word's records in the batch.
"""

from weirpy import msgpack
from weirpy.operator import InvalidInput, OperatorBase
from weirpy.state import KeyedState, States

U64_MAX = (1 << 64) - 1


def _check_u64(n):
    """Checks a restored count (`from_plain` of the state)."""
    if n is True or n is False or not isinstance(n, int) or n < 0:
        raise InvalidInput("the value of a word record is not an unsigned integer: %r" % (n,))
    return n


def _check_word(key):
    word = msgpack.unpackb(key)
    if not isinstance(word, str):
        raise InvalidInput("the key of a word record is not a string: %r" % (word,))


class Operator(OperatorBase):
    NAME = "wordcount-python"
    STATE_VERSION = 0

    def __init__(self):
        super().__init__()
        self.counts = KeyedState("counts", from_plain=_check_u64)
        self.states = States(self.counts)

    def process_batch(self, records, out):
        # The batch API (weirpy.batches): increments arrive decoded; keys stay the word's
        # MessagePack bytes, which key the state.
        counts = self.counts
        get, put = counts.get, counts.put
        # The distinct words of the batch -> their latest timestamp (first-seen order).
        seen = {}
        for key, increment, timestamp in records:
            if increment.__class__ is not int or increment < 0:
                raise InvalidInput("the value of a word record is not an unsigned integer: %r" % (increment,))
            current = get(key)
            if current is None:
                _check_word(key)
                current = 0
            total = current + increment
            put(key, total if total <= U64_MAX else U64_MAX)
            latest = seen.get(key)
            if latest is None or timestamp > latest:
                seen[key] = timestamp
        append = out.append
        for key, timestamp in seen.items():
            append((key, get(key), timestamp))
