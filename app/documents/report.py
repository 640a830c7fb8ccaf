"""A research report as a Word document: title page, the Markdown's structure, numbered sources.

The report the model wrote is Markdown; markdown-it-py (CommonMark, with
GitHub's tables and strikethrough) reads it into a tree, and each node
becomes its Word counterpart with python-docx: headings as Heading styles
(so a table of contents or the PDF's outline finds them), lists as Word's
own numbered and bulleted lists (each numbered list counting from its own
start), tables as tables with a bold header row, links as hyperlinks, code
in a monospaced font. The first page holds the question and the date; the
sources the report cites as `[n]` end it, numbered the same, with their
links. East Asian text is set in Noto CJK (Debian's fonts-noto-cjk), which
LibreOffice then embeds in the PDF; Word without it picks its own.

Left out: pictures (a report's image links are kept as links: nothing is
fetched while a document is written), raw HTML (kept as its text), footnotes.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time

import docx
from docx.document import Document
from docx.enum.style import WD_STYLE_TYPE
from docx.opc.constants import RELATIONSHIP_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Pt, RGBColor
from docx.table import _Cell
from docx.text.paragraph import Paragraph
from docx.text.run import Run
from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

EAST_ASIAN_FONT = "Noto Sans CJK SC"
MONOSPACE_FONT = "Courier New"
LINK_COLOR = RGBColor(0x1F, 0x4E, 0x9A)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_WEB_LINK = re.compile(r"^https?://", re.IGNORECASE)
_LIST_STYLES = {"bullet_list": "List Bullet", "ordered_list": "List Number"}
_DEEPEST_LIST = 3
"""Word's template has list styles three levels deep; deeper items stay at the third."""


@dataclass(frozen=True, slots=True)
class CitedSource:
    """One source as the report cites it: `[number]`."""

    number: int
    title: str
    url: str


@dataclass(frozen=True, slots=True)
class Labels:
    kind: str
    references: str


_LABELS = {
    "en": Labels("Research report", "References"),
    "zh": Labels("研究报告", "参考文献"),
}


def report_docx(
    question: str, markdown: str, sources: Sequence[CitedSource], written: date
) -> bytes:
    """The report as .docx bytes (blocking: run it in a thread)."""
    labels = _LABELS["zh" if _CJK.search(question) else "en"]
    document = docx.Document()
    _east_asian_fonts(document)
    properties = document.core_properties
    properties.title = question[:255]
    properties.subject = labels.kind
    properties.created = datetime.combine(written, time())
    # The title a third of the way down its page, as a cover has it.
    document.add_paragraph(question, style="Title").paragraph_format.space_before = Pt(200)
    document.add_paragraph(f"{labels.kind} · {written.isoformat()}", style="Subtitle")
    document.add_page_break()
    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    writer = _Writer(document)
    for node in SyntaxTreeNode(parser.parse(markdown)).children:
        writer.block(node)
    if sources:
        document.add_heading(labels.references, level=1)
        for source in sources:
            paragraph = document.add_paragraph()
            paragraph.add_run(f"[{source.number}] ")
            if source.title and source.title != source.url:
                paragraph.add_run(f"{source.title}. ")
            _add_link(paragraph, source.url, source.url)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


class _Writer:
    """Markdown blocks into the document, in order."""

    def __init__(self, document: Document) -> None:
        self._document = document

    def block(self, node: SyntaxTreeNode, style: str | None = None, depth: int = 0) -> None:
        match node.type:
            case "heading":
                paragraph = self._document.add_heading(level=min(int(node.tag[1:]), 6))
                self.inline(paragraph, node)
            case "paragraph":
                self.inline(self._document.add_paragraph(style=style), node)
            case "bullet_list" | "ordered_list":
                self.list(node, depth)
            case "blockquote":
                for child in node.children:
                    self.block(child, "Quote", depth)
            case "fence" | "code_block":
                paragraph = self._document.add_paragraph(style="No Spacing")
                lines = node.content.rstrip("\n").split("\n")
                for index, line in enumerate(lines):
                    run = paragraph.add_run(line)
                    run.font.name = MONOSPACE_FONT
                    run.font.size = Pt(9)
                    if index < len(lines) - 1:
                        run.add_break()
            case "table":
                self.table(node)
            case "html_block":
                self._document.add_paragraph(node.content.strip())
            case _:
                # A thematic break, or a kind this writer does not know: only what is
                # inside it matters.
                for child in node.children:
                    self.block(child, style, depth)

    def list(self, node: SyntaxTreeNode, depth: int) -> None:
        level = min(depth + 1, _DEEPEST_LIST)
        base = _LIST_STYLES[node.type]
        style = base if level == 1 else f"{base} {level}"
        number_id = None
        if node.type == "ordered_list":
            start = int(str(node.attrs.get("start", 1)))
            number_id = _restarted_numbering(self._document, style, start)
        for item in node.children:
            first = True
            for child in item.children:
                if child.type == "paragraph":
                    paragraph = self._document.add_paragraph(
                        style=style if first else f"List Continue{'' if level == 1 else level}"
                    )
                    if first and number_id is not None:
                        _number(paragraph, number_id)
                    self.inline(paragraph, child)
                    first = False
                else:
                    self.block(child, None, depth + 1)

    def table(self, node: SyntaxTreeNode) -> None:
        rows = [row for part in node.children for row in part.children]
        if not rows:
            return
        columns = max(len(row.children) for row in rows)
        table = self._document.add_table(rows=len(rows), cols=columns)
        table.style = "Table Grid"
        for r, row in enumerate(rows):
            for c, cell_node in enumerate(row.children):
                cell: _Cell = table.cell(r, c)
                paragraph = cell.paragraphs[0]
                self.inline(paragraph, cell_node, bold=cell_node.type == "th")
        self._document.add_paragraph()

    def inline(self, paragraph: Paragraph, node: SyntaxTreeNode, *, bold: bool = False) -> None:
        for child in node.children:
            if child.type == "inline":
                _Inline(paragraph).add(child.children, bold=bold)
            else:
                _Inline(paragraph).add([child], bold=bold)


class _Inline:
    """A paragraph's runs: text with its emphasis, breaks, code and links."""

    def __init__(self, paragraph: Paragraph) -> None:
        self._paragraph = paragraph

    def add(
        self,
        nodes: Sequence[SyntaxTreeNode],
        *,
        bold: bool = False,
        italic: bool = False,
        strike: bool = False,
    ) -> None:
        for node in nodes:
            match node.type:
                case "text" | "html_inline":
                    self._run(node.content, bold, italic, strike)
                case "softbreak":
                    self._run(" ", bold, italic, strike)
                case "hardbreak":
                    self._paragraph.add_run().add_break()
                case "strong":
                    self.add(node.children, bold=True, italic=italic, strike=strike)
                case "em":
                    self.add(node.children, bold=bold, italic=True, strike=strike)
                case "s":
                    self.add(node.children, bold=bold, italic=italic, strike=True)
                case "code_inline":
                    self._run(node.content, bold, italic, strike).font.name = MONOSPACE_FONT
                case "link" | "image":
                    url = str(node.attrs.get("href") or node.attrs.get("src") or "")
                    text = _plain(node) or url
                    if _WEB_LINK.match(url):
                        _add_link(self._paragraph, url, text)
                    else:
                        self._run(text, bold, italic, strike)
                case _:
                    self.add(node.children, bold=bold, italic=italic, strike=strike)

    def _run(self, text: str, bold: bool, italic: bool, strike: bool) -> Run:
        run = self._paragraph.add_run(text)
        run.bold = bold or None
        run.italic = italic or None
        run.font.strike = strike or None
        return run


def _plain(node: SyntaxTreeNode) -> str:
    """The text inside an inline node (a link's words, an image's description)."""
    if node.type in ("text", "code_inline"):
        return node.content
    return "".join(_plain(child) for child in node.children)


def _add_link(paragraph: Paragraph, url: str, text: str) -> None:
    """A hyperlink to `url` (python-docx reads them but has no call to write one)."""
    relation = paragraph.part.relate_to(url, RELATIONSHIP_TYPE.HYPERLINK, is_external=True)
    link = OxmlElement("w:hyperlink")
    link.set(qn("r:id"), relation)
    run = paragraph.add_run(text)
    run.font.color.rgb = LINK_COLOR
    run.font.underline = True
    link.append(run._r)
    paragraph._p.append(link)


def _east_asian_fonts(document: Document) -> None:
    """Every paragraph style sets Chinese, Japanese and Korean text in Noto CJK."""
    for style in document.styles:
        if style.type != WD_STYLE_TYPE.PARAGRAPH:
            continue
        fonts = style.element.get_or_add_rPr().get_or_add_rFonts()
        fonts.set(qn("w:eastAsia"), EAST_ASIAN_FONT)
        attribute = qn("w:eastAsiaTheme")
        if attribute in fonts.attrib:
            del fonts.attrib[attribute]


def _restarted_numbering(document: Document, style: str, start: int) -> int:
    """A numbering of `style`'s list that counts from `start`: Word's list styles share one
    numbering, which would run on from the report's previous numbered list."""
    properties = document.styles[style].element.pPr
    assert properties is not None
    assert properties.numPr is not None
    style_number = properties.numPr.numId.val
    numbering = document.part.numbering_part.element
    abstract = numbering.num_having_numId(style_number).abstractNumId.val
    restarted = numbering.add_num(abstract)
    level = restarted.add_lvlOverride(ilvl=0)
    level.add_startOverride(start)
    return int(restarted.numId)


def _number(paragraph: Paragraph, number_id: int) -> None:
    properties = paragraph._p.get_or_add_pPr().get_or_add_numPr()
    properties.get_or_add_ilvl().val = 0
    properties.get_or_add_numId().val = number_id
