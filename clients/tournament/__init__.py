"""rummy-tournament: duplicate-deal round robins of bots through the referee (``clients.tournament.cli``), with
Bradley-Terry ratings (``ratings``), a resumable journal (``journal``) and a report (``report``)."""
