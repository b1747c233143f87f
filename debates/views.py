from django.shortcuts import render

from personas.models import Library


def home(request):
    libraries = Library.objects.prefetch_related("personas")
    return render(request, "home.html", {"libraries": libraries})
