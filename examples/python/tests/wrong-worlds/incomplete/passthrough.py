"""Test fixture: the smallest operator of the `incomplete` world
(engine/test-guests/worlds/incomplete: the operator interface without `snapshot` and
`restore`). It forwards every batch unchanged. componentize-py builds it; Weir must refuse
it at upload, naming the missing functions."""

from wit_world import exports
from wit_world.imports import types


class Operator(exports.Operator):
    def describe(self):
        return types.OperatorInfo(name="passthrough-incomplete-python", state_version=0, migrates_from=[])

    def open(self, context):
        pass

    def process(self, input, batch):
        return batch

    def on_watermark(self, timestamp):
        return types.Batch(data=b"", entries=[])

    def on_timer(self, key, timestamp):
        return types.Batch(data=b"", entries=[])
