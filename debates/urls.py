from django.urls import path

from debates import invitations, views

app_name = "debates"
urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("debates/new/", views.new, name="new"),
    path("debates/new/part/", views.new_part, name="new_part"),
    path("debates/suggest/", views.suggest, name="suggest"),
    path("debates/<int:pk>/", views.live, name="live"),
    path("debates/<int:pk>/report/", views.report, name="report"),
    path("debates/<int:pk>/export.md", views.export_md, name="export_md"),
    path("debates/<int:pk>/report.md", views.export_md, {"part": "report"}, name="export_report_md"),
    path("debates/<int:pk>/transcript.md", views.export_md, {"part": "transcript"}, name="export_transcript_md"),
    path("debates/<int:pk>/export.json", views.export_json, name="export_json"),
    path("debates/<int:pk>/stop/", views.stop, name="stop"),
    path("debates/<int:pk>/resume/", views.resume, name="resume"),
    path("debates/<int:pk>/checkpoint/", views.checkpoint, name="checkpoint"),
    path("debates/<int:pk>/share/", views.share, name="share"),
    path("debates/<int:pk>/speak/", views.speak, name="speak"),
    path("debates/<int:pk>/regenerate/", views.regenerate, name="regenerate"),
    path("debates/<int:pk>/fork/", views.fork, name="fork"),
    path("debates/<int:pk>/swap/", views.swap, name="swap"),
    path("debates/<int:pk>/compare/", views.compare, name="compare"),
    path("debates/<int:pk>/compare/<int:cid>/", views.comparison, name="comparison"),
    path("comparisons/", views.tally, name="tally"),
    path("debates/<int:pk>/turns/<int:turn_pk>/retry/", views.retry_turn, name="retry_turn"),
    path("seats/<int:seat_id>/invitation/", invitations.answer, name="answer_invitation"),
    path("seats/<int:seat_id>/leave/", invitations.leave, name="leave_seat"),
    path("seats/<int:seat_id>/withdraw/", invitations.withdraw, name="withdraw_invitation"),
    path("invitations/decline-all/", invitations.decline_all, name="decline_all_invitations"),
]
