#!/usr/bin/env python3
"""The person's browser in crates/boxmaker/tests/oauth.rs: opens the sign-in URL and follows
every redirect (with cookies, as a browser keeps them) until boxmaker's loopback callback
answers. Prints the last page's status and text.

  oauth_browser.py URL
"""

import http.cookiejar
import sys
import urllib.request

opener = urllib.request.build_opener(
    urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
)
try:
    with opener.open(sys.argv[1], timeout=30) as r:
        print(r.status, r.geturl(), r.read().decode(errors="replace"))
except urllib.error.HTTPError as e:
    print(e.code, e.geturl(), e.read().decode(errors="replace"))
    sys.exit(1)
