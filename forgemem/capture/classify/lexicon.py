""""From now on", "always" and "never" in the other languages people write to their agents in.

One list for every rule that reads them: what is never durable unless said to last (`never`), a standing rule and
the person's answer language (`learned`), and a word of change (`relate_language`). Each is a regex alternation,
to be put inside `\\b(?:…)\\b`.
"""

from __future__ import annotations

#: German, French, Spanish, Portuguese, Italian, Dutch and Polish: "ab jetzt", "désormais", "a partir de agora", …
FROM_NOW_ON = ("ab jetzt|ab sofort|ab heute|künftig|désormais|dorénavant|à partir de maintenant|à partir d'aujourd'hui|"
               "de ahora en adelante|a partir de (?:ahora|agora|hoy|hoje)|d'ora in poi|voortaan|vanaf (?:nu|vandaag)|"
               "od (?:teraz|dziś|dzisiaj)")
ALWAYS = "immer|siempre|sempre|toujours|altijd|zawsze"
NEVER = "nie|niemals|nunca|jamais|mai|nooit|nigdy"
#: "überall", "partout", "en todas partes", …: a rule for every place, not one
EVERYWHERE = "überall|partout|en todas partes|en todos lados|em todo lugar|em todos os lugares|ovunque|overal|wszędzie"
