"""Build support_rag.jsonl: RAG support cases for the fictional "Nimbus Notes" app.

Deterministic (no randomness beyond a fixed seed), run from the repo root:
    .venv/bin/python evalsite/datasets/demo_data/build_support_rag.py

Each topic gives two cases:
- A: the first phrasing of the question, a faithful answer grounded in the context
  (or, for two topics, a partial answer that skips half of the question);
- B: the second phrasing, with the topic's defect: an answer that adds claims the
  context does not support ("unsupported_claim"), one that contradicts it with wrong
  numbers or negations ("contradiction"), or a correct answer whose retrieved context
  is about something else ("irrelevant_context").
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("support_rag.jsonl")

TOPICS: list[dict[str, Any]] = [
    {
        "topic": "pricing",
        "q": [
            "How much does Nimbus Notes Plus cost?",
            "What's the monthly price of the Plus plan, and is it cheaper if I pay yearly?",
        ],
        "context": [
            "Nimbus Notes Plus costs $4.99 per month when billed monthly.",
            "Paying yearly for Plus costs $47.88 per year, which works out to $3.99 per month.",
            "All prices are in US dollars and exclude local sales tax or VAT.",
        ],
        "reference": "Plus is $4.99 per month, or $47.88 per year ($3.99 per month) when billed yearly, before tax.",
        "faithful": "Plus is $4.99 a month on monthly billing. If you pay yearly it's $47.88, which comes to $3.99 a month. Prices are in US dollars and don't include sales tax or VAT.",
        "bad": (
            "contradiction",
            "The Plus plan is $5.99 per month. Paying yearly doesn't change the price: the annual plan costs the same as twelve monthly payments.",
        ),
    },
    {
        "topic": "plans",
        "q": [
            "What are the limits of the free plan?",
            "If I stay on the Free plan, how many devices can I use and how much storage do I get?",
        ],
        "context": [
            "The Free plan syncs notes across up to 2 devices.",
            "Free accounts include 1 GB of total storage and a 25 MB limit per attachment.",
            "Version history on the Free plan covers the last 7 days.",
        ],
        "reference": "Free syncs up to 2 devices, with 1 GB of storage, 25 MB per attachment and 7 days of version history.",
        "faithful": "On Free you can sync up to 2 devices and you get 1 GB of storage in total. Single attachments can be up to 25 MB, and version history goes back 7 days.",
        "bad": (
            "unsupported_claim",
            "The Free plan lets you sync 2 devices with 1 GB of storage. Free users also get unlimited AI summaries and priority email support, and the device limit is lifted automatically after your first year.",
        ),
    },
    {
        "topic": "billing",
        "q": [
            "Can I get a refund if I cancel my yearly subscription?",
            "I was charged for a yearly plan I didn't mean to buy. Can I get my money back?",
        ],
        "context": [
            "Yearly subscriptions can be refunded in full within 14 days of the charge.",
            "After 14 days, yearly plans are not refunded, but you keep access until the end of the paid year.",
            "Monthly subscriptions are not refunded; cancelling stops the next renewal.",
        ],
        "reference": "Yes, within 14 days of the charge a yearly plan is refunded in full; after that there is no refund but access continues until the end of the year.",
        "faithful": "Yes. If it's within 14 days of the charge we refund a yearly plan in full. After 14 days we can't refund it, but you keep your paid features until the end of the year you paid for.",
        "bad": (
            "irrelevant_context",
            "If the charge was in the last 14 days, you can get a full refund of the yearly plan. Reply with the receipt number and we'll process it.",
        ),
        "irrelevant_from": ["export", "markdown"],
    },
    {
        "topic": "sync",
        "q": [
            "What happens when I edit the same note on two devices while offline?",
            "How does Nimbus resolve sync conflicts?",
        ],
        "context": [
            "When the same note is changed on two devices before they sync, Nimbus keeps both versions.",
            'The newer edit stays in the note, and the other version is saved as a conflict copy named "(conflict copy)" in the same notebook.',
            "Conflict copies are never merged automatically.",
        ],
        "reference": 'Both versions are kept: the newer edit stays in the note and the other becomes a "(conflict copy)" note in the same notebook; nothing is merged automatically.',
        "faithful": 'Nimbus keeps both versions. The most recent edit stays in the original note, and the other one is saved as a separate note marked "(conflict copy)" in the same notebook. We never merge them automatically, so you can compare and keep what you need.',
        "bad": (
            "unsupported_claim",
            'Nimbus keeps the newer edit in the note and saves the other version as a "(conflict copy)". It also emails you a side-by-side diff of the two versions and deletes the conflict copy after 30 days if you don\'t open it.',
        ),
    },
    {
        "topic": "sync",
        "q": [
            "Can I use Nimbus Notes without an internet connection?",
            "Does offline mode work on the Free plan, and what about attachments?",
        ],
        "context": [
            "Offline mode is available on every plan, including Free.",
            'On mobile, notebooks must be marked "Available offline" before they can be opened without a connection; the desktop apps keep all notes offline.',
            "Attachments larger than 50 MB are not stored offline on mobile devices.",
        ],
        "reference": 'Yes, on every plan including Free; on mobile mark notebooks "Available offline" (desktop keeps everything), and attachments over 50 MB are not kept offline on mobile.',
        "faithful": 'Yes, offline mode works on every plan, Free included. On the desktop apps all your notes are available offline. On mobile, mark a notebook as "Available offline" first. One limit: attachments bigger than 50 MB aren\'t stored offline on phones and tablets.',
        "bad": (
            "contradiction",
            "Offline mode is only included with Plus and Pro, so it won't work on the Free plan. On mobile every notebook is available offline automatically, and attachments of any size are stored offline.",
        ),
    },
    {
        "topic": "sync",
        "q": [
            "My notes stopped syncing on my phone. What should I try?",
            'Sync has been stuck on "Syncing…" for an hour on Android. How do I fix it?',
        ],
        "context": [
            "If sync stops, first check Settings > Account > Sync status for an error message.",
            "Signing out and back in forces a full resync; unsynced local changes are kept and uploaded after sign-in.",
            "Sync pauses when the device is in battery saver mode on Android.",
        ],
        "reference": "Check Settings > Account > Sync status for an error, turn off Android battery saver (it pauses sync), and if needed sign out and back in to force a full resync; unsynced changes are kept.",
        "faithful": "First look at Settings > Account > Sync status, which shows the error if there is one. On Android, battery saver mode pauses sync, so turn it off. If it's still stuck, sign out and back in: that forces a full resync, and any changes you haven't synced yet are kept and uploaded afterwards.",
        "bad": (
            "irrelevant_context",
            "Battery saver on Android pauses sync, so switch it off first. If that doesn't help, sign out and sign back in to force a full resync; your unsynced edits are kept.",
        ),
        "irrelevant_from": ["templates", "security"],
    },
    {
        "topic": "export",
        "q": [
            "Which formats can I export my notes to, and can I export a whole notebook at once?",
            "Can I export notes as Word documents?",
        ],
        "context": [
            "Single notes can be exported as PDF, Markdown or HTML.",
            "Whole notebooks are exported as a ZIP file of Markdown files with attachments in a folder.",
            "Export to Word (.docx) is not supported; export to HTML and open it in Word instead.",
        ],
        "reference": "Notes export as PDF, Markdown or HTML; whole notebooks export as a ZIP of Markdown files with attachments; Word is not supported directly (export HTML and open it in Word).",
        "faithful": "You can export a note as PDF, Markdown or HTML.",
        "partial": True,
        "bad": (
            "unsupported_claim",
            "There's no direct Word export, but you can export to HTML and open that in Word. We're adding .docx export in the next release, and Pro users can already export to Google Docs with one click.",
        ),
    },
    {
        "topic": "export",
        "q": [
            "Is there a limit on how many notes I can export at once?",
            "How big can a notebook export be?",
        ],
        "context": [
            "A single export can contain up to 10,000 notes.",
            "Exports larger than 2 GB are split into several ZIP files.",
            "Export links are emailed to the account owner and expire after 7 days.",
        ],
        "reference": "Up to 10,000 notes per export; exports over 2 GB are split into several ZIP files; the emailed download link expires after 7 days.",
        "faithful": "One export can include up to 10,000 notes. If the export is over 2 GB we split it into several ZIP files. You'll get the download link by email, and it stays valid for 7 days.",
        "bad": (
            "contradiction",
            "You can export up to 1,000 notes at a time, and exports are never split: anything over 2 GB fails. The download link stays valid for 30 days.",
        ),
    },
    {
        "topic": "import",
        "q": [
            "How do I move my notes over from Evernote?",
            "Can Nimbus import an ENEX file with attachments and tags?",
        ],
        "context": [
            "Nimbus imports Evernote .enex files from File > Import > Evernote on the desktop apps.",
            "Tags, attachments and creation dates are kept; reminders are not imported.",
            "Each .enex file becomes one notebook.",
        ],
        "reference": "Export .enex files from Evernote and use File > Import > Evernote on desktop; each file becomes a notebook, keeping tags, attachments and creation dates but not reminders.",
        "faithful": "Export your notebooks from Evernote as .enex files, then in the Nimbus desktop app go to File > Import > Evernote. Each .enex file becomes its own notebook. Tags, attachments and creation dates come across; reminders don't.",
        "bad": (
            "irrelevant_context",
            "Yes. Use File > Import > Evernote in the desktop app. Tags, attachments and creation dates are kept, but reminders aren't imported.",
        ),
        "irrelevant_from": ["pricing", "linux"],
    },
    {
        "topic": "security",
        "q": [
            "Are my notes end-to-end encrypted?",
            "If I forget the passphrase for an encrypted notebook, can support recover it?",
        ],
        "context": [
            "Pro and Teams plans can turn on end-to-end encryption per notebook, using AES-256.",
            "The encryption passphrase never leaves your devices, and Nimbus cannot read encrypted notebooks.",
            "A forgotten passphrase cannot be recovered, and the notebook's content is lost.",
        ],
        "reference": "On Pro and Teams you can enable AES-256 end-to-end encryption per notebook; the passphrase never leaves your devices, so a forgotten passphrase cannot be recovered and the content is lost.",
        "faithful": "On Pro and Teams you can turn on end-to-end encryption for individual notebooks (AES-256). Your passphrase stays on your devices and we can't read encrypted notebooks, which also means we can't recover a forgotten passphrase: the content would be lost.",
        "bad": (
            "contradiction",
            "Don't worry: support can reset the passphrase for you after verifying your identity, because Nimbus keeps a recovery copy of the key. End-to-end encryption is available on every plan, including Free.",
        ),
    },
    {
        "topic": "security",
        "q": [
            "How do I turn on two-factor authentication?",
            "What happens if I lose the phone I use for 2FA?",
        ],
        "context": [
            "Two-factor authentication is set up in Settings > Security with any TOTP authenticator app.",
            "When you enable 2FA you get 10 single-use backup codes.",
            "If you lose your device and your backup codes, account recovery takes 3 to 5 business days of identity checks.",
        ],
        "reference": "Enable it in Settings > Security with a TOTP app; keep the 10 backup codes, which let you sign in if you lose the phone; without them recovery takes 3–5 business days of identity checks.",
        "faithful": "Go to Settings > Security and scan the QR code with any authenticator app that supports TOTP. You'll get 10 single-use backup codes; keep them somewhere safe, since they let you in if you lose your phone. Without them, account recovery takes 3 to 5 business days while we verify your identity.",
        "bad": (
            "unsupported_claim",
            "Use one of your 10 backup codes to sign in, then set up 2FA again in Settings > Security. You can also receive a code by SMS to any number on file, and support can disable 2FA instantly over live chat.",
        ),
    },
    {
        "topic": "security",
        "q": [
            "Where is my data stored? Can I keep it in the EU?",
            "Can I move my existing workspace from the US to the EU region?",
        ],
        "context": [
            "Workspaces are hosted in either the EU (Frankfurt) or the US (Virginia) region.",
            "The region is chosen when the workspace is created.",
            "Moving an existing workspace to another region is done by support and requires a maintenance window of up to 24 hours.",
        ],
        "reference": "Data is hosted in the EU (Frankfurt) or US (Virginia) region chosen at workspace creation; support can move a workspace, with a maintenance window of up to 24 hours.",
        "faithful": "We host workspaces in two regions, EU (Frankfurt) and US (Virginia). You pick the region when you create the workspace, so choose EU at that point to keep data in the EU. Existing workspaces can be moved by our support team.",
        "bad": (
            "irrelevant_context",
            "Yes, support can move an existing workspace to the EU region in Frankfurt. Plan for a maintenance window of up to 24 hours while the move runs.",
        ),
        "irrelevant_from": ["reminders", "api"],
    },
    {
        "topic": "api",
        "q": [
            "What are the API rate limits, and what happens if I go over them?",
            "How many API requests per minute does the Pro plan allow?",
        ],
        "context": [
            "The API is not available on the Free plan.",
            "Plus allows 60 requests per minute per token; Pro and Teams allow 300 requests per minute per token.",
            "Requests over the limit get HTTP 429 with a Retry-After header giving the seconds to wait.",
        ],
        "reference": "No API on Free; 60 requests/minute per token on Plus, 300 on Pro and Teams; over the limit you get HTTP 429 with a Retry-After header.",
        "faithful": "Plus tokens can make 60 requests per minute, and Pro and Teams tokens 300 per minute. The Free plan has no API access.",
        "partial": True,
        "bad": (
            "contradiction",
            "Pro allows 100 requests per minute per token. Going over the limit doesn't block you; requests are just queued, so there's no need to handle any error code.",
        ),
    },
    {
        "topic": "api",
        "q": [
            "How do I authenticate with the Nimbus API?",
            "Do personal access tokens expire?",
        ],
        "context": [
            "The API uses personal access tokens created in Settings > Developer.",
            "Each token has scopes (read, write, admin) chosen when it is created.",
            "Tokens expire after 90 days unless they are renewed.",
        ],
        "reference": "Create a personal access token with the scopes you need in Settings > Developer and send it with each request; tokens expire after 90 days unless renewed.",
        "faithful": "Create a personal access token in Settings > Developer and pick its scopes (read, write or admin) when you create it, then send it with your API requests. Tokens expire after 90 days unless you renew them.",
        "bad": (
            "unsupported_claim",
            "Yes, tokens expire after 90 days unless you renew them. You'll get a reminder email two weeks before, and tokens used from a new IP address are revoked automatically for safety.",
        ),
    },
    {
        "topic": "api",
        "q": [
            "Does Nimbus support webhooks?",
            "What happens if my webhook endpoint is down?",
        ],
        "context": [
            "Webhooks are available on Pro and Teams for note created, updated and deleted events.",
            "Failed deliveries are retried 5 times over 24 hours with exponential backoff.",
            "Each delivery is signed with an HMAC-SHA256 signature in the X-Nimbus-Signature header.",
        ],
        "reference": "Yes, on Pro and Teams (note created/updated/deleted); failed deliveries are retried 5 times over 24 hours with exponential backoff, and each is signed with HMAC-SHA256.",
        "faithful": "Yes, on Pro and Teams you can get webhooks when a note is created, updated or deleted. Every delivery is signed with HMAC-SHA256 in the X-Nimbus-Signature header so you can verify it came from us.",
        "bad": (
            "irrelevant_context",
            "We retry a failed delivery 5 times over 24 hours, backing off exponentially between attempts. After that the event is dropped, so make sure your endpoint comes back within a day.",
        ),
        "irrelevant_from": ["plans", "clipper"],
    },
    {
        "topic": "attachments",
        "q": [
            "What's the maximum attachment size?",
            "Can I attach a 500 MB video on the Plus plan?",
        ],
        "context": [
            "The maximum size of a single attachment is 25 MB on Free, 200 MB on Plus and 1 GB on Pro and Teams.",
            "Attachments count toward your total storage.",
            "Videos play inline on desktop and web; on mobile they open in the system player.",
        ],
        "reference": "25 MB on Free, 200 MB on Plus, 1 GB on Pro and Teams per attachment; so a 500 MB video needs Pro or Teams.",
        "faithful": "Single attachments can be up to 25 MB on Free, 200 MB on Plus and 1 GB on Pro and Teams. Attachments also count toward your storage.",
        "bad": (
            "contradiction",
            "Yes, Plus supports attachments up to 1 GB, so a 500 MB video is fine. Attachments also don't count toward your storage quota.",
        ),
    },
    {
        "topic": "history",
        "q": [
            "How far back does version history go?",
            "Can I restore a note to how it looked two months ago on Plus?",
        ],
        "context": [
            "Version history keeps 7 days on Free, 30 days on Plus and 1 year on Pro and Teams.",
            "Open a note and choose History to see and restore earlier versions.",
            "Restoring a version creates a new version, so nothing is lost.",
        ],
        "reference": "7 days on Free, 30 days on Plus, 1 year on Pro and Teams; a two-month-old version needs Pro or Teams. Restore from the note's History menu.",
        "faithful": "It depends on your plan: 7 days on Free, 30 days on Plus, and a full year on Pro and Teams. Open the note and choose History to browse and restore earlier versions; restoring adds a new version, so you never lose the current one.",
        "bad": (
            "unsupported_claim",
            "Plus keeps 30 days of history, so a two-month-old version isn't in History anymore. Our support team can still pull it from nightly backups for a one-time $10 fee, and it arrives within an hour.",
        ),
    },
    {
        "topic": "trash",
        "q": [
            "How long do deleted notes stay in the trash?",
            "I emptied my trash by mistake. Can you get my notes back?",
        ],
        "context": [
            "Deleted notes stay in the trash for 30 days and are then deleted permanently.",
            "On Teams, workspace admins can restore permanently deleted notes for another 30 days from the admin console.",
            "Emptying the trash on Free, Plus or Pro deletes notes immediately and they cannot be recovered.",
        ],
        "reference": "Notes stay in the trash for 30 days; an emptied trash cannot be recovered on Free, Plus or Pro, while Teams admins can restore for another 30 days from the admin console.",
        "faithful": "Deleted notes stay in the trash for 30 days and are then removed permanently. On Teams, an admin can still restore them for another 30 days from the admin console.",
        "bad": (
            "irrelevant_context",
            "If you're on Free, Plus or Pro, emptying the trash deletes notes right away and we can't recover them. On Teams, ask your workspace admin: they can restore them from the admin console for 30 days.",
        ),
        "irrelevant_from": ["clipper", "ocr"],
    },
    {
        "topic": "sharing",
        "q": [
            "Can I share a note with someone who doesn't use Nimbus?",
            "Can I password-protect a shared link?",
        ],
        "context": [
            "Any note can be shared with a public, read-only link that works without a Nimbus account.",
            "On Plus and above, shared links can have a password and an expiry date.",
            "Turning off a link stops it working immediately.",
        ],
        "reference": "Yes, with a public read-only link that needs no account; on Plus and above links can have a password and expiry date, and turning a link off stops it at once.",
        "faithful": "Yes. Share the note with a public link: it's read-only and works for anyone, no Nimbus account needed. On Plus and above you can add a password and an expiry date, and you can turn the link off at any time.",
        "bad": (
            "unsupported_claim",
            "Yes, on Plus and above you can set a password and an expiry date on a shared link. You can also see who opened the link and from which country, and links are automatically indexed by search engines unless you opt out.",
        ),
    },
    {
        "topic": "collaboration",
        "q": [
            "Can my team edit the same note at the same time?",
            "How many people can edit a note at once on Teams?",
        ],
        "context": [
            "Real-time co-editing is available on the Teams plan.",
            "Up to 25 people can edit the same note at the same time; others can still view it.",
            "Each editor's cursor is shown with their name.",
        ],
        "reference": "Yes, on Teams: up to 25 people can co-edit a note at once (others can view), with named cursors.",
        "faithful": "Yes, real-time co-editing is part of the Teams plan. Up to 25 people can edit the same note at once, and anyone beyond that can still view it. You'll see each editor's cursor with their name.",
        "bad": (
            "contradiction",
            "On Teams there's no limit on simultaneous editors, so your whole company can edit the same note at once. Real-time editing also works on the Free plan.",
        ),
    },
    {
        "topic": "billing",
        "q": [
            "How is billing handled when I add people to my Teams workspace?",
            "If I add a seat halfway through the month, do I pay for the whole month?",
        ],
        "context": [
            "Teams costs $12 per user per month.",
            "Seats added during a billing period are charged pro rata for the days remaining.",
            "Removed seats are credited to the next invoice.",
        ],
        "reference": "Teams is $12 per user per month; seats added mid-period are charged pro rata for the remaining days, and removed seats are credited on the next invoice.",
        "faithful": "Teams is $12 per user per month. When you add someone during a billing period you only pay pro rata for the days left, and if you remove a seat the unused part is credited to your next invoice.",
        "bad": (
            "unsupported_claim",
            "No, you're charged pro rata for the days left in the period. The first 3 seats you add each year are free, and seats for guests with view-only access never count toward your bill.",
        ),
    },
    {
        "topic": "billing",
        "q": [
            "What happens to my notes if I cancel my subscription?",
            "If I downgrade from Pro to Free, will I lose notes above the storage limit?",
        ],
        "context": [
            "Cancelling takes effect at the end of the current billing period.",
            "After downgrading to Free, nothing is deleted; if you are over the Free limits, your account becomes read-only until you are back under them.",
            "Encrypted notebooks stay readable after a downgrade but cannot be edited.",
        ],
        "reference": "Paid features last until the end of the period; after downgrading nothing is deleted, but an account over the Free limits is read-only until back under them, and encrypted notebooks become read-only.",
        "faithful": "Nothing is deleted. Your plan stays active until the end of the billing period. After that, if you're over the Free limits, your account becomes read-only until you're back under them; encrypted notebooks stay readable but can't be edited.",
        "bad": (
            "irrelevant_context",
            "You won't lose any notes. If you're over the Free limits after downgrading, the account goes read-only until you free up space or upgrade again.",
        ),
        "irrelevant_from": ["history", "sso"],
    },
    {
        "topic": "pricing",
        "q": [
            "Do you offer a student discount?",
            "How do I get the education discount and how long does it last?",
        ],
        "context": [
            "Students and teachers get 50% off Plus and Pro with a school email address.",
            "Eligibility is verified once a year.",
            "The discount applies to yearly billing only.",
        ],
        "reference": "Yes, 50% off Plus and Pro for students and teachers with a school email, on yearly billing only, re-verified once a year.",
        "faithful": "Yes. Students and teachers get 50% off Plus or Pro when they sign up with a school email address. It applies to yearly billing, and we re-check eligibility once a year.",
        "bad": (
            "contradiction",
            "Students get 20% off any plan, including monthly billing. Once verified, the discount lasts for life and never needs to be checked again.",
        ),
    },
    {
        "topic": "clipper",
        "q": [
            "Which browsers does the web clipper support?",
            "Is there a Nimbus web clipper for Safari?",
        ],
        "context": [
            "The Nimbus Web Clipper is available for Chrome, Firefox and Edge.",
            "Safari is not supported; on macOS use the Share menu to save pages instead.",
            "Clipped pages keep their images and links.",
        ],
        "reference": "Chrome, Firefox and Edge; Safari is not supported, so on macOS use the Share menu to save pages.",
        "faithful": "The Web Clipper works in Chrome, Firefox and Edge. There's no Safari version; on a Mac you can save pages through the Share menu instead. Clipped pages keep their images and links.",
        "bad": (
            "unsupported_claim",
            "There's no Safari extension; on macOS use the Share menu to save pages. The clipper for Chrome can also save full YouTube transcripts and summarize articles automatically, and a Safari version is planned for next month.",
        ),
    },
    {
        "topic": "ocr",
        "q": [
            "Can I search for text inside images and PDFs?",
            "Does text search work on scanned PDFs in the Free plan?",
        ],
        "context": [
            "Text in images and scanned PDFs is recognised (OCR) on Plus, Pro and Teams.",
            "OCR supports more than 20 languages.",
            "New attachments are usually searchable within a few minutes of upload.",
        ],
        "reference": "OCR search in images and scanned PDFs is on Plus, Pro and Teams (not Free), in 20+ languages, usually ready a few minutes after upload.",
        "faithful": "Yes, on Plus, Pro and Teams we run OCR on images and scanned PDFs, in more than 20 languages. New attachments usually become searchable within a few minutes.",
        "bad": (
            "irrelevant_context",
            "No, OCR search in scanned PDFs needs Plus, Pro or Teams; it isn't part of the Free plan.",
        ),
        "irrelevant_from": ["sync", "billing"],
    },
    {
        "topic": "account",
        "q": [
            "How do I delete my account and all my data?",
            "After I delete my account, how long until my data is gone from backups?",
        ],
        "context": [
            "Delete your account in Settings > Account > Delete account.",
            "There is a 14-day grace period during which you can cancel the deletion by signing in.",
            "After the grace period, data is removed from live systems at once and from backups within 35 days.",
        ],
        "reference": "Use Settings > Account > Delete account; you can cancel within 14 days by signing in; then data leaves live systems immediately and backups within 35 days.",
        "faithful": "Go to Settings > Account > Delete account. You have 14 days to change your mind by signing in again. After that we remove your data from our live systems right away and from backups within 35 days.",
        "bad": (
            "contradiction",
            "Deletion is immediate and can't be cancelled, and your data is removed from backups within 90 days.",
        ),
    },
    {
        "topic": "sso",
        "q": [
            "Does Nimbus support single sign-on?",
            "Can we use Okta for SSO on the Teams plan?",
        ],
        "context": [
            "SAML single sign-on is available on Teams with the Enterprise add-on.",
            "Supported identity providers include Okta, Microsoft Entra ID (Azure AD) and Google Workspace.",
            "When SSO is enforced, members can no longer sign in with a password.",
        ],
        "reference": "Yes, SAML SSO on Teams with the Enterprise add-on, with Okta, Microsoft Entra ID (Azure AD) and Google Workspace; enforced SSO disables password sign-in.",
        "faithful": "Yes, SAML single sign-on is available on Teams with the Enterprise add-on. It works with Okta, Microsoft Entra ID (Azure AD) and Google Workspace, and once you enforce SSO members can't sign in with a password anymore.",
        "bad": (
            "unsupported_claim",
            "Yes, Okta works with SAML SSO on Teams with the Enterprise add-on. SCIM provisioning is included at no extra cost, and the setup is done for you by a dedicated engineer within 24 hours.",
        ),
    },
    {
        "topic": "linux",
        "q": [
            "Is there a Nimbus Notes app for Linux?",
            "Can I install Nimbus on Ubuntu with snap?",
        ],
        "context": [
            "The Linux desktop app is available as an AppImage, a Flatpak and a .deb package.",
            "A Snap package is not provided.",
            "The Linux app supports x86_64 only.",
        ],
        "reference": "Yes, as an AppImage, a Flatpak or a .deb (x86_64 only); there is no Snap package, so on Ubuntu use the .deb or Flatpak.",
        "faithful": "Yes. The Linux app comes as an AppImage, a Flatpak or a .deb package, for x86_64 machines. We don't publish a Snap.",
        "bad": (
            "irrelevant_context",
            "There's no Snap package. On Ubuntu, install the .deb package or the Flatpak instead; both are kept up to date.",
        ),
        "irrelevant_from": ["sharing", "account"],
    },
    {
        "topic": "templates",
        "q": [
            "Can I create my own note templates?",
            "Are templates available on the Free plan?",
        ],
        "context": [
            "Everyone can use the gallery of 40 built-in templates.",
            "Custom templates can be created on Plus, Pro and Teams from any note with More > Save as template.",
            "On Teams, templates can be shared with the whole workspace.",
        ],
        "reference": "Free users can use the 40 built-in templates; custom templates (More > Save as template) need Plus, Pro or Teams, and Teams can share them workspace-wide.",
        "faithful": "Yes, on Plus, Pro and Teams you can turn any note into a template with More > Save as template. Everyone, including Free users, can use the 40 built-in templates, and on Teams you can share your templates with the whole workspace.",
        "bad": (
            "unsupported_claim",
            "Free users can use the 40 built-in templates; saving your own needs Plus or above. Free users can also import templates from Notion, and new templates are added to the gallery every week.",
        ),
    },
    {
        "topic": "reminders",
        "q": [
            "How do reminders work in Nimbus?",
            "Will I get an email when a reminder is due?",
        ],
        "context": [
            "You can add a reminder to any note with a date and time.",
            "Reminders send a push notification on mobile and desktop.",
            "Email reminders are off by default and can be turned on in Settings > Notifications.",
        ],
        "reference": "Add a date and time to a note; reminders send push notifications on mobile and desktop, and email reminders are off by default but can be enabled in Settings > Notifications.",
        "faithful": "Add a reminder to any note and choose a date and time; when it's due you get a push notification on your phone and desktop. Email reminders are off by default, and you can switch them on in Settings > Notifications.",
        "bad": (
            "contradiction",
            "Yes, every reminder sends an email by default, and there's no way to turn emails off. Push notifications only work on desktop, not on mobile.",
        ),
    },
    {
        "topic": "markdown",
        "q": [
            "Does the editor support Markdown?",
            "Can I write math formulas in my notes?",
        ],
        "context": [
            "The editor supports CommonMark Markdown, including tables and task lists.",
            "LaTeX math between $$ signs is rendered on Pro and Teams.",
            "Markdown shortcuts can be turned off in Settings > Editor.",
        ],
        "reference": "Yes, CommonMark with tables and task lists (shortcuts can be turned off in Settings > Editor); LaTeX math between $$ is rendered on Pro and Teams.",
        "faithful": "Yes, the editor supports CommonMark Markdown, including tables and task lists. If you prefer plain typing, you can turn off Markdown shortcuts in Settings > Editor.",
        "bad": (
            "unsupported_claim",
            "On Pro and Teams, LaTeX between $$ signs is rendered as math. The editor also converts handwritten equations from photos into LaTeX and can plot any formula as a chart.",
        ),
    },
    {
        "topic": "storage",
        "q": [
            "How much storage do I get on each plan?",
            "What happens when I run out of storage on Plus?",
        ],
        "context": [
            "Storage is 1 GB on Free, 50 GB on Plus, 250 GB on Pro and 1 TB per user on Teams.",
            "When you reach your storage limit, you can still read and edit notes but cannot add new attachments.",
            "Emptying the trash frees the space used by deleted attachments.",
        ],
        "reference": "1 GB Free, 50 GB Plus, 250 GB Pro, 1 TB per user on Teams; at the limit you can read and edit notes but not add attachments, and emptying the trash frees space.",
        "faithful": "Free includes 1 GB, Plus 50 GB, Pro 250 GB, and Teams 1 TB per user. Emptying the trash frees the space used by deleted attachments.",
        "bad": (
            "unsupported_claim",
            "When you hit the 50 GB limit on Plus you can still read and edit notes, but you can't add new attachments. We also automatically compress your oldest images to free space, and you can buy extra storage in 10 GB packs for $1 each.",
        ),
    },
]

CHUNKS_BY_TOPIC: dict[str, list[str]] = {}
for _t in TOPICS:
    CHUNKS_BY_TOPIC.setdefault(_t["topic"], []).extend(_t["context"])


def _irrelevant_context(topic: dict[str, Any]) -> list[str]:
    """Two or three chunks from the named unrelated topics (first chunk of each, then one more)."""
    picked: list[str] = []
    for name in topic["irrelevant_from"]:
        picked.extend(CHUNKS_BY_TOPIC[name][:2])
    return picked[:3]


def build() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for n, topic in enumerate(TOPICS):
        a_type = "partial" if topic.get("partial") else "faithful"
        cases.append(
            {
                "input": topic["q"][0],
                "output": topic["faithful"],
                "context": topic["context"],
                "reference": topic["reference"],
                "metadata": {
                    "case_type": a_type,
                    "topic": topic["topic"],
                    "ticket": f"NN-{1000 + 2 * n}",
                },
            }
        )
        kind, answer = topic["bad"]
        cases.append(
            {
                "input": topic["q"][1],
                "output": answer,
                "context": _irrelevant_context(topic)
                if kind == "irrelevant_context"
                else topic["context"],
                "reference": _reference_for_second(topic),
                "metadata": {
                    "case_type": kind,
                    "topic": topic["topic"],
                    "ticket": f"NN-{1001 + 2 * n}",
                },
            }
        )
    random.Random(20240607).shuffle(cases)
    return cases


def _reference_for_second(topic: dict[str, Any]) -> str:
    reference: str = topic.get("reference_2") or topic["reference"]
    return reference


def main() -> None:
    cases = build()
    with open(OUT, "w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case, ensure_ascii=False) + "\n")
    counts: dict[str, int] = {}
    for case in cases:
        counts[case["metadata"]["case_type"]] = (
            counts.get(case["metadata"]["case_type"], 0) + 1
        )
    print(f"wrote {len(cases)} cases to {OUT}: {counts}")


if __name__ == "__main__":
    main()
