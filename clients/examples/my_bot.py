# A complete Gin bot (README): knocks when it can, else discards to keep its deadwood lowest. It plays seat 1
# against the bundled gin bot on the referee at argv[1] (default 127.0.0.1:50051, where `make run` listens).
import sys, threading
from clients.bots import make_bot
from clients.runner import play_seat
from clients.sdk import RefereeClient
from engine import Discard, Knock, min_deadwood, parse_card

class LowDeadwood:
    name = "low-deadwood"
    def observe(self, event): pass  # every event this seat may see, e.g. {"kind": "discarded", "card": "TD"}
    def choose(self, view, legal):
        hand = sum(1 << parse_card(card) for card in view.hand)
        knocks = [m for m in legal if isinstance(m, Knock)]
        discards = [m for m in legal if isinstance(m, Discard)]
        if knocks or not discards:  # knock when allowed; else draw, pass or declare as listed first
            return (knocks or legal)[0]
        return min(discards, key=lambda m: min_deadwood(hand & ~(1 << m.card)))

address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
with RefereeClient(address) as referee:
    game = referee.create_game("gin", seats=("gin bot", "me"), target_score=50)
    opponent = threading.Thread(target=play_seat, args=(address, game.game_id, game.tokens[0], make_bot("gin")))
    opponent.start()
    result = play_seat(address, game.game_id, game.tokens[1], LowDeadwood())
    print("scores:", result.final.view.scores, "winners:", result.match_result["winners"])
