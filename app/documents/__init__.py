"""The document pipeline: files users upload and files agents make.

`library` stores them (bytes in the blob store, rows through the file
store), extracts their text (`extract`), cuts it into passages and finds
the ones that answer a question (`retrieval`). The model-facing search
tool is in `tools/documents.py`; the HTTP routes in `api/files.py`.
"""
