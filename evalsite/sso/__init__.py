"""Single sign-on with OpenID Connect (mozilla-django-oidc), off unless configured.

`provider` finds the identity provider's endpoints (discovery or explicit settings),
`backends` checks the ID token and finds or creates the user, `roles` turns a claim
into project roles, `views` are the login and callback pages. docs/operations/sso.md
is the operator's guide.
"""
