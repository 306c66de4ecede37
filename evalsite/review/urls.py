from __future__ import annotations

from django.urls import path

from evalsite.review.estimates import views as estimates
from evalsite.review.explorer import views as explorer
from evalsite.review.guidelines import views as guidelines
from evalsite.review.housekeeping import views as housekeeping
from evalsite.review.lab import views as lab
from evalsite.review.matrix import views as matrix
from evalsite.review.pairwise import views as pairwise
from evalsite.review.queues import views as queues
from evalsite.review.team import views as reviews
from evalsite.review.views import (
    audit,
    comments,
    flow,
    item,
    overrides,
    preferences,
    rescore,
)

app_name = "review"
P = "projects/<int:project_id>/"
L = f"{P}scorers/<int:scorer_id>/lab/"
C = f"{L}candidates/<int:candidate_id>/"
# The converter is registered by evalsite.review.housekeeping.selectors.
_KIND = "<housekeeping_kind:kind>"
urlpatterns = [
    # Archive, unarchive, delete (runs, datasets, scorers, judges, queues).
    path(
        f"{P}{_KIND}/<int:pk>/archive",
        housekeeping.object_archive,
        name="object_archive",
    ),
    path(
        f"{P}{_KIND}/<int:pk>/unarchive",
        housekeeping.object_unarchive,
        name="object_unarchive",
    ),
    path(
        f"{P}{_KIND}/<int:pk>/delete",
        housekeeping.object_delete,
        name="object_delete",
    ),
    # The judge lab of a scorer.
    path(L, lab.lab, name="lab"),
    path(f"{L}candidates/", lab.candidate_create, name="lab_candidate_create"),
    path(C, lab.candidate_update, name="lab_candidate_update"),
    path(f"{C}examples/", lab.example_add, name="lab_example_add"),
    path(
        f"{C}examples/proposed/",
        lab.example_add_proposed,
        name="lab_example_add_proposed",
    ),
    path(f"{C}examples/remove/", lab.example_remove, name="lab_example_remove"),
    path(f"{C}replay/", lab.replay_preview, name="lab_replay_preview"),
    path(f"{C}replay/start/", lab.replay_start, name="lab_replay_start"),
    path(f"{C}promote/", lab.candidate_promote, name="lab_candidate_promote"),
    path(
        f"{L}replays/<int:replay_id>/cancel/",
        lab.replay_cancel,
        name="lab_replay_cancel",
    ),
    # Item page, overrides, what-if rescore.
    path(f"{P}results/<int:result_id>/", item.item, name="item"),
    path(
        f"{P}results/<int:result_id>/overrides/",
        overrides.override_create,
        name="override_create",
    ),
    path(f"{P}results/<int:result_id>/accept/", overrides.accept, name="accept"),
    path(
        f"{P}results/<int:result_id>/calls/<int:call_id>/",
        item.judge_call,
        name="judge_call",
    ),
    path(
        f"{P}overrides/<int:override_id>/undo/",
        overrides.override_revert,
        name="override_revert",
    ),
    path(f"{P}runs/<int:run_id>/items/<int:item_id>/", item.run_item, name="run_item"),
    path(f"{P}runs/<int:run_id>/rescore/", rescore.rescore, name="rescore"),
    # Results explorer, review queues, assigned work, comments, audit log.
    path(f"{P}runs/<int:run_id>/results/", explorer.explorer, name="explorer"),
    path(f"{P}runs/<int:run_id>/matrix/", matrix.matrix, name="matrix"),
    path(
        f"{P}runs/<int:run_id>/results/bulk/",
        explorer.bulk_action,
        name="explorer_bulk",
    ),
    path(
        f"{P}runs/<int:run_id>/results/filters/",
        explorer.saved_filter_create,
        name="saved_filter_create",
    ),
    path(
        f"{P}runs/<int:run_id>/results/filters/<int:saved_filter_id>/",
        explorer.saved_filter_apply,
        name="saved_filter_apply",
    ),
    path(
        f"{P}runs/<int:run_id>/results/filters/<int:saved_filter_id>/delete/",
        explorer.saved_filter_delete,
        name="saved_filter_delete",
    ),
    path(f"{P}runs/<int:run_id>/queues/", queues.queue_create, name="queue_create"),
    path(
        f"{P}runs/<int:run_id>/calibration/",
        estimates.calibration_create,
        name="calibration_create",
    ),
    path(
        f"{P}runs/<int:run_id>/estimates/",
        estimates.run_estimates_fragment,
        name="run_estimates",
    ),
    path(f"{P}runs/<int:run_id>/audit/", audit.run_audit, name="run_audit"),
    path(f"{P}queues/<int:queue_id>/", queues.queue_detail, name="queue"),
    # Overlap answers and adjudication (before the queue keys' catch-all action).
    path(
        f"{P}queues/<int:queue_id>/<int:position>/answer/",
        reviews.queue_answer,
        name="queue_answer",
    ),
    path(
        f"{P}queues/<int:queue_id>/<int:position>/withdraw/",
        reviews.queue_answer_withdraw,
        name="queue_answer_withdraw",
    ),
    path(
        f"{P}queues/<int:queue_id>/<int:position>/adjudicate/",
        reviews.adjudicate,
        name="adjudicate",
    ),
    path(
        f"{P}queues/<int:queue_id>/<int:position>/flag/",
        queues.queue_flag,
        name="queue_flag",
    ),
    path(f"{P}flagged/", queues.flag_list, name="flagged"),
    path(
        f"{P}flagged/<int:flag_id>/resolve/",
        queues.flag_resolve,
        name="flag_resolve",
    ),
    path(f"{P}adjudication/", reviews.adjudication_list, name="adjudication"),
    path(f"{P}runs/<int:run_id>/agreement/", reviews.agreement, name="agreement"),
    path(
        f"{P}runs/<int:run_id>/agreement/figures/",
        reviews.agreement_figures,
        name="agreement_figures",
    ),
    path(
        f"{P}queues/<int:queue_id>/<int:position>/<slug:action>/",
        queues.queue_action,
        name="queue_action",
    ),
    path(f"{P}queue/", queues.assigned, name="assigned"),
    path(f"{P}results/<int:result_id>/comments/", comments.comments, name="comments"),
    path(f"{P}results/<int:result_id>/audit/", audit.result_audit, name="result_audit"),
    # Guidelines and the reviewer's own preferences.
    path(f"{P}guidelines/", guidelines.project_guidelines, name="project_guidelines"),
    path(
        f"{P}queues/<int:queue_id>/guidelines/",
        guidelines.queue_guidelines,
        name="queue_guidelines",
    ),
    path("preferences/", preferences.preferences, name="preferences"),
    path(f"{P}results/<int:result_id>/diff/", flow.result_diff, name="result_diff"),
    # Pairwise review: which of two runs' outputs is better.
    path(
        f"{P}runs/<int:run_id>/pairwise/",
        pairwise.pairwise_create,
        name="pairwise_create",
    ),
    path(
        f"{P}runs/<int:run_id>/pairwise/agreement/",
        pairwise.pairwise_run_agreement,
        name="pairwise_run_agreement",
    ),
    path(f"{P}pairwise/<int:pairwise_id>/", pairwise.pairwise_detail, name="pairwise"),
    path(
        f"{P}pairwise/<int:pairwise_id>/<int:position>/answer/",
        pairwise.pairwise_answer_view,
        name="pairwise_answer",
    ),
]
