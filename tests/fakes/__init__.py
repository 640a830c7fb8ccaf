"""Fakes of the services the app talks to, real enough to run the real clients against."""
