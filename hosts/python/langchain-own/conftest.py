"""LangChain's own tests of ``trim_messages``, run verbatim against
ctxpack's drop-in: its module is imported after this file, so the name
it imports is ctxpack's."""

import langchain_core.messages as messages
import langchain_core.messages.utils as utils

from ctxpack_wasm.chat import trim_messages

utils.trim_messages = trim_messages
messages.trim_messages = trim_messages


def pytest_collection_modifyitems(items):
    for item in items:
        assert item.module.trim_messages is trim_messages, "LangChain's own trim_messages would run"
