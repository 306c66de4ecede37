from __future__ import annotations

from evalsite.review.urls_item import urlpatterns as item_urlpatterns
from evalsite.review.urls_queue import urlpatterns as queue_urlpatterns

app_name = "review"
urlpatterns = item_urlpatterns + queue_urlpatterns
