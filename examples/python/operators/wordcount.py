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


def _decode_u64(value):
    n = msgpack.unpackb(value)
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
        self.counts = KeyedState("counts", decode=_decode_u64)
        self.states = States(self.counts)
        # The distinct words of the batch being processed -> their latest timestamp
        # (a dict keeps first-seen order).
        self.batch_words = {}

    def process_record(self, key, value, timestamp, out):
        # Fast path: an increment below 128 is one byte (positive fixint).
        if len(value) == 1 and value[0] < 0x80:
            increment = value[0]
        else:
            increment = _decode_u64(value)
        counts = self.counts
        current = counts.get(key)
        if current is None:
            _check_word(key)
            current = 0
        total = current + increment
        counts.put(key, total if total <= U64_MAX else U64_MAX)
        seen = self.batch_words
        latest = seen.get(key)
        if latest is None or timestamp > latest:
            seen[key] = timestamp

    def end_batch(self, input, out):
        counts = self.counts
        for key, timestamp in self.batch_words.items():
            out.emit_raw(key, msgpack.pack_uint(counts.get(key)), timestamp)
        self.batch_words = {}
