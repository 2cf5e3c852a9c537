"""The Studio opened and signed in to the way a user does it, shared by the browser tests."""

from __future__ import annotations

VIEWPORT = {"width": 1280, "height": 900}


def open_studio(browser, url: str):
    """(context, page): a fresh browser context (its own session storage) on the loaded Studio."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready=true]")
    return context, page


def sign_in(page, key: str) -> None:
    """Keyboard only: focus the key field, type, press Enter."""
    page.focus("#api-key")
    page.keyboard.type(key)
    page.keyboard.press("Enter")


def signed_in(page, studio, tab: str | None = None) -> None:
    """Sign in with the studio's key, wait for the tabs, and open ``tab`` (write, analyze, train...)."""
    sign_in(page, studio.key)
    page.wait_for_selector("#tabs:not([hidden])")
    if tab is not None:
        page.click(f"#tabs button[data-tab={tab}]")
