"""The chat's fixed wording: the command menu, /start, /help, usage, and the sentences a check can end with.

English, with /start also in Russian and Ukrainian; the card's words are in core/i18n.py.
"""

from __future__ import annotations

COMMANDS: list[tuple[str, str]] = [
    ("start", "What this bot does"),
    ("help", "How to use it, privacy, examples"),
    ("check", "Fact-check a message: reply to it with /check, or /check <text>"),
    ("evidence", "All sources and the trace of a past check: /evidence <check id>"),
    ("domains", "Admins: trusted and blocked source domains (/domains list)"),
    ("review", "Admins: checks waiting for a verdict; /review <id> <rating> <url> records one"),
    ("track", "Admins: /track on|off stores this chat's messages for 'also reported by'"),
    ("auto", "Admins: /auto on|off answers group messages that match a known fact-check"),
    ("forget", "/forget me: delete your checks, votes and messages. Admins: /forget: this chat's messages"),
    ("stats", "Admins: checks, verdict mix, match rate, tracked chats"),
    ("digest", "Admins: /digest on [daily HH:MM | every N h] [top K], off, now: what spread in tracked chats"),
    ("trending", "Admins: /trending [hours] the stories spreading in tracked chats now"),
    ("alerts", "Admins: /alerts on N: one message per false story reaching N tracked chats"),
    ("watch", "Admins: /watch add @channel or a feed's URL reads public channels and news feeds (list, remove)"),
]

START_TEXT = (
    "👋 I'm tipline, an open-source fact-checking bot.\n\n"
    "Send or forward me a message and I'll check it against published fact-checks, "
    "then answer with a verdict, my confidence, and the sources.\n\n"
    "In groups, reply to a message with /check, or write /check followed by the text, "
    "or mention me. Send /help for more."
)
HELP_TEXT = (
    "How to use me\n"
    "• Private chat: send or forward any message: text, a screenshot (I read the text in it), "
    "or a captioned photo/video.\n"
    "• Groups: reply to a message with /check, write /check <text>, or mention me with the text. "
    "I don't read ordinary group chatter.\n\n"
    "Examples\n"
    "• The 5G rollout caused the coronavirus outbreak\n"
    "• /check Drinking bleach cures COVID-19\n\n"
    "Evidence and feedback\n"
    "• /evidence <check id> shows every source, match and step behind a verdict "
    "(the id is at the bottom of the card; the Sources button does the same).\n"
    "• 👍 / 👎 under a card tell us whether it helped; a 👎 on an unsettled check is sent for review.\n\n"
    "Admins\n"
    "• /domains list shows the trusted and blocked source domains; "
    "/domains allow add <domain> or /domains deny add <domain> changes them "
    "(in a group: for that group, by its admins).\n"
    "• /track on|off (groups and channels) stores the chat's messages for a limited time so that "
    "verdict cards can say which other chats reported the same story; /forget deletes them. "
    "/auto on|off lets me answer group messages that match a known fact-check. /stats shows usage.\n"
    "• /digest on [daily HH:MM | every N h] [top K] posts what spread in the tracked chats (/digest now, "
    "/digest off); /trending [hours] posts it at once; /alerts on N tells you once per false story that "
    "reached N tracked chats.\n"
    "• /watch add @channel (or a t.me link) reads a public Telegram channel's posts from its web preview, with no "
    "admin rights in it, so 'also reported by' and digests count it too (a news outlet's RSS or Atom feed's "
    "address works the same way); /watch list, /watch remove @channel.\n"
    "• /review (in a private chat) lists the checks waiting for a person; /review <check id> <rating> <url> "
    "records a verdict, and everyone who asked about that claim gets it as a reply where they asked.\n\n"
    "Privacy\n"
    "I only look at messages you send me or ask me to check, and at messages of groups and channels "
    "whose admins turned /track on, and at the public web preview of channels the bot's admins /watch. "
    "The checked text and the verdict are stored with a check id so the "
    "result can be reviewed, for a limited time. /forget me deletes every check you asked for, your votes "
    "and your messages in tracked chats. Other chats see a tracked chat's name and message link in 'Also reported by' "
    "lines; digests and alerts, which admins set up, also quote a message of a story once it has spread "
    "to two or more tracked chats. "
    "Verdicts are automatic and can be wrong: always read the sources."
)
USAGE_TEXT = ("Send me the text to check, or reply to a message with /check. "
              "For example: /check The 5G rollout caused the coronavirus outbreak")
EMPTY_TEXT = "There's nothing I can check in that message — send me some text, or a photo with a caption."
ERROR_TEXT = "😔 Sorry, something went wrong while checking this. Please try again in a little while."

INFO_TEXT = {"start": START_TEXT, "help": HELP_TEXT, "usage": USAGE_TEXT}
# /start in the asker's language where we have it (the rest of /help is English for now).
START_TEXTS = {
    "ru": "👋 Я tipline, бот для проверки фактов с открытым кодом.\n\n"
          "Пришлите или перешлите мне сообщение: я сверю его с опубликованными проверками фактов и отвечу "
          "вердиктом, уверенностью и источниками.\n\n"
          "В группах ответьте на сообщение командой /check, напишите /check и текст или упомяните меня. "
          "Подробнее: /help.",
    "uk": "👋 Я tipline, бот для перевірки фактів із відкритим кодом.\n\n"
          "Надішліть або перешліть мені повідомлення: я звірю його з опублікованими перевірками фактів і "
          "відповім вердиктом, упевненістю та джерелами.\n\n"
          "У групах дайте відповідь на повідомлення командою /check, напишіть /check і текст або згадайте мене. "
          "Докладніше: /help.",
}
