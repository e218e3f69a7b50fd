"""The terminal game behind ``rummy play`` (``clients.play``): drawing cards and tables (``render``), describing
events (``events``), the rules in brief (``guide``), the interactive seat (``session``) and the private referee
it may start (``local``)."""
