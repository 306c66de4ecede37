"""One rule for views that answer htmx with a fragment and the browser with a page.

A view that switches on htmx asks `wants_partial(request)` (or `partial(...)` for the
template name) and is decorated with `@vary_on_htmx`:

- A history-restore request (htmx's back button after its history cache missed) sends
  `HX-Request: true` too, but wants the whole page: answering it with a fragment would
  leave the user on a bare region without layout.
- `Vary: HX-Request, HX-History-Restore-Request` stops the browser (and any cache) from
  serving the fragment it fetched for a pushed URL when the user reloads or comes back.

`messages_oob(request, response)` appends the messages added during an htmx request as
an out-of-band swap of base.html's `#messages` region (HtmxMessagesMiddleware calls it),
so they show at once instead of on some later full page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from evalsite.core.http import HtmxHttpRequest

VARY_HEADERS = ("HX-Request", "HX-History-Restore-Request")
MESSAGES_TEMPLATE = "_messages.html"

# Headers that send the browser elsewhere instead of swapping this response.
_CLIENT_NAVIGATION = ("HX-Redirect", "HX-Location", "HX-Refresh")

_View = TypeVar("_View", bound=Callable[..., HttpResponseBase])


def wants_partial(request: HtmxHttpRequest) -> bool:
    """An htmx request that swaps a region (not a history restore, which wants the page)."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def partial(request: HtmxHttpRequest, template_name: str, region: str) -> str:
    """`template_name#region` for htmx swaps, `template_name` (the page) otherwise."""
    return f"{template_name}#{region}" if wants_partial(request) else template_name


def vary_on_htmx(view: _View) -> _View:
    """Mark a view whose response depends on the htmx request headers."""
    return vary_on_headers(*VARY_HEADERS)(view)


def redirect_htmx(request: HtmxHttpRequest, url: str) -> HttpResponse:
    """Go to `url`: a whole-page client redirect for htmx, a 302 otherwise."""
    if wants_partial(request):
        return HttpResponseClientRedirect(url)
    return redirect(url)


def messages_oob(request: HttpRequest, response: HttpResponseBase) -> None:
    """Append the request's pending messages to an htmx response as an out-of-band
    swap of `#messages` (which consumes them). Redirects, streams and non-HTML
    responses are left alone: their messages wait for the page they lead to."""
    htmx = getattr(request, "htmx", None)
    if not htmx or htmx.history_restore_request:
        return
    # htmx swaps neither errors nor 204s, and a redirect's messages belong to the
    # page it leads to.
    if (
        not isinstance(response, HttpResponse)
        or not 200 <= response.status_code < 300
        or response.status_code == 204
        or any(response.has_header(h) for h in _CLIENT_NAVIGATION)
        or not response.get("Content-Type", "").startswith("text/html")
    ):
        return
    storage = messages.get_messages(request)
    # A page rendered whole has shown them already (iterating marks them used);
    # len() only peeks.
    if getattr(storage, "used", False) or not len(storage):
        return
    html = render_to_string(
        MESSAGES_TEMPLATE, {"messages": storage, "oob": True}, request=request
    )
    response.content += html.encode(response.charset)
    if response.has_header("Content-Length"):
        response["Content-Length"] = str(len(response.content))


class HtmxMessagesMiddleware:
    """Sends the messages of an htmx request along with its response (out of band).

    Listed after MessageMiddleware (and HtmxMiddleware), so it sees the response
    before the message storage saves what is left."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        messages_oob(request, response)
        return response
