"""The periods a query speaks of: "on 13 October, 2023", "in July 2023", "in June", "last week".

Recall favours memories written in such a period (`forgemem.recall.surroundings`). Each period is
stretched past its end, because people write about a day or a month a little after it ("we went
camping last weekend" in a memory from the week after):

    a day ("October 13, 2023", "13 October 2023", "2023-10-13")   the day before it to a week after
    a month ("July 2023"; "in June", any year the candidates span)  its first day to three weeks after
    "today", "yesterday", "this week", "last week", "last month"   back from now (the end is now)

A month without a year is read only when spelled out after a preposition ("in May", "during June",
"since March"): "may" and "march" are also words. Years are read as written; nothing else (seasons, "two years ago") is.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

FULL_NAMES = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name} | FULL_NAMES
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_FULL_NAME = "|".join(FULL_NAMES)
_DAY_FIRST = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_FIRST = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_BARE_MONTH = re.compile(
    rf"\b(?:in|on|during|since|from|until|till|by|before|after|of|early|mid|late)\s+(?:-\s*)?({_FULL_NAME})\b(?!\s*\d)",
    re.IGNORECASE)
_RELATIVE = {
    "today": 1, "yesterday": 2, "this week": 7, "last week": 14, "past week": 14,
    "this month": 31, "last month": 62, "past month": 62,
}
_RELATIVE_RE = re.compile(r"\b(" + "|".join(_RELATIVE) + r")\b", re.IGNORECASE)
DAY_BEFORE, DAY_AFTER = timedelta(days=1), timedelta(days=8)
MONTH_AFTER = timedelta(days=21)

Period = tuple[datetime, datetime]


def periods(text: str, years: Iterable[int], now: datetime | None = None) -> list[Period]:
    """The [start, end) periods `text` names, in UTC; `years` are tried for a month named without one."""
    found: list[Period] = []
    for match in _DAY_FIRST.finditer(text):
        found += _day(int(match.group(3)), MONTHS[match.group(2).lower()], int(match.group(1)))
    for match in _MONTH_FIRST.finditer(text):
        found += _day(int(match.group(3)), MONTHS[match.group(1).lower()], int(match.group(2)))
    for match in _ISO_DAY.finditer(text):
        found += _day(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    if not found:  # a day already says its month
        for match in _MONTH_YEAR.finditer(text):
            found += _month(int(match.group(2)), MONTHS[match.group(1).lower()])
        if not found:
            for match in _BARE_MONTH.finditer(text):
                for year in sorted(set(years)):
                    found += _month(year, MONTHS[match.group(1).lower()])
    relative = _RELATIVE_RE.search(text)
    if relative:
        end = now or datetime.now(UTC)
        found.append((end - timedelta(days=_RELATIVE[relative.group(1).lower()]), end + timedelta(minutes=1)))
    return found


def within(moment: datetime, spans: list[Period]) -> bool:
    return any(start <= moment < end for start, end in spans)


def _day(year: int, month: int, day: int) -> list[Period]:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
        return [(start - DAY_BEFORE, start + DAY_AFTER)]
    except (ValueError, OverflowError):  # "February 30"; a day at the ends of the calendar (year 1, 9999)
        return []


def _month(year: int, month: int) -> list[Period]:
    if not 1 <= year <= 9998:
        return []
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return [(start, end + MONTH_AFTER)]
