"""Writes resources/prompts/workloads.json: SpecScope's workload prompt suite (written for this
project; CC0). Run once; the JSON is what ships."""
import json, pathlib

C = {}

C["multi-turn"] = [
 [("user", "I'm planning a weekend trip to a city I've never visited. What should I pack for two days?"),
  ("assistant", "Pack light: two outfits, comfortable walking shoes, a light jacket, a phone charger, a reusable water bottle and any medication you need."),
  ("user", "It might rain on Saturday. What would you change?")],
 [("user", "Can you suggest a name for a small bakery that sells sourdough bread?"),
  ("assistant", "How about \"Rise & Crumb\"? It hints at the slow rise of sourdough and sounds friendly."),
  ("user", "I like it. Can you give me three more in the same style?")],
 [("user", "What is the difference between a list and a tuple in Python?"),
  ("assistant", "A list is mutable: you can add, remove and change items. A tuple is immutable: once created it cannot change, which makes it hashable and usable as a dictionary key."),
  ("user", "When would I choose a tuple over a list in practice?")],
 [("user", "I want to start running. How often should I run in the first month?"),
  ("assistant", "Three times a week is a good start, with a rest day between runs. Alternate one minute of running with two minutes of walking for about twenty minutes."),
  ("user", "And how should I increase it in the second month?")],
 [("user", "Help me write a short thank-you note to a colleague who covered my shift."),
  ("assistant", "Hi Sam, thank you so much for covering my shift on Friday. It made a real difference, and I owe you one. Best, Alex"),
  ("user", "Make it a little more formal, please.")],
 [("user", "What are the main parts of a plant cell?"),
  ("assistant", "The main parts are the cell wall, the cell membrane, the nucleus, the cytoplasm, chloroplasts, mitochondria and a large central vacuole."),
  ("user", "Which of those does an animal cell not have?")],
]

C["translation"] = [
 "Translate into French: The library opens at nine in the morning and closes at six in the evening, except on Sundays.",
 "Translate into Spanish: Please remember to water the plants on the balcony while I am away next week.",
 "Translate into German: The train to the airport leaves every twenty minutes from platform four.",
 "Translate into English: Le petit chat dort sur le canapé pendant que la pluie tombe doucement dehors.",
 "Translate into Italian: We would like to book a table for four people on Friday evening at eight o'clock.",
 "Translate into English: El museo está cerrado los lunes, pero el jardín se puede visitar todos los días.",
]

C["summarization"] = [
 "Summarize in two sentences:\n\nThe town council met on Tuesday to discuss the new bicycle lanes. Several residents said the lanes made the main street safer for children riding to school. Shop owners worried that removing parking spaces would keep customers away. After two hours of debate, the council agreed to keep the lanes for a six-month trial and to count visitors to the shops before making a final decision.",
 "Summarize in one paragraph:\n\nOur team moved the nightly data import from a single large server to a set of small workers. Each worker now processes one region's files, so a failure in one region no longer stops the others. The import finishes in forty minutes instead of three hours. The change required rewriting the scheduler and adding a dashboard that shows each worker's progress. Next quarter we plan to retire the old server entirely.",
 "Summarize the main points as a bulleted list:\n\nA good night's sleep depends on routine more than on any single trick. Going to bed and getting up at the same time every day, even at weekends, sets the body's clock. Bright light in the morning and dim light in the evening help too. Caffeine late in the day and large meals before bed make it harder to fall asleep. A cool, dark and quiet bedroom is best.",
 "Summarize this email in one sentence:\n\nHi all, just a reminder that the office will be closed next Monday for the public holiday. The support line will still be answered by the on-call team, and any urgent tickets should be marked as high priority. Regular hours resume on Tuesday. Thanks, Maria",
 "Write a short summary of this story:\n\nA fisherman found a glass bottle tangled in his net. Inside was a letter written by a girl fifty years earlier, asking whoever found it to write back. He searched the address, learned that the girl was now a grandmother living two towns away, and drove there with the letter. She laughed when she saw it and invited him in for tea, and they talked until the evening.",
 "Summarize the argument in three sentences:\n\nRemote work saves commuting time and lets companies hire from anywhere. Critics say it weakens team bonds and makes it harder for new employees to learn. Many companies now choose a hybrid model: people work from home most days and meet in the office once or twice a week for planning and mentoring. Early surveys suggest that this balance keeps most of the benefits of both.",
]

C["question-answering"] = [
 "Why do we have seasons on Earth?",
 "How does a refrigerator keep food cold?",
 "What is the difference between weather and climate?",
 "Why does bread go stale?",
 "How do vaccines help the body fight infections?",
 "What causes the tides in the ocean?",
]

C["math-reasoning"] = [
 "A shop sells pencils in packs of 12 for 3 dollars. How much do 60 pencils cost? Explain step by step.",
 "A train travels 180 kilometres in 2 hours and then 120 kilometres in 1.5 hours. What is its average speed for the whole trip? Show your reasoning.",
 "Sara is three times as old as her son. In 12 years she will be twice as old as him. How old is Sara now? Solve it step by step.",
 "A rectangle has a perimeter of 36 centimetres and its length is twice its width. What is its area? Explain each step.",
 "If 5 workers build a wall in 8 days, how many days would 4 workers need, working at the same rate? Show the calculation.",
 "A recipe needs 250 grams of flour for 10 cookies. How much flour is needed for 36 cookies? Work it out step by step.",
]

C["retrieval"] = [
 "Use only the document below to answer.\n\nDocument: The Greenway Library lends books for three weeks. Books can be renewed twice online unless another reader has reserved them. Late returns cost 20 cents per day, up to a maximum of 5 dollars per book. Children's books have no late fees.\n\nQuestion: I borrowed a novel 25 days ago and nobody has reserved it. What should I do, and will I pay anything?",
 "Answer from the context only.\n\nContext: The Model K kettle holds 1.7 litres. It switches off automatically when the water boils or when it is lifted from its base. The filter can be removed for cleaning; descale the kettle every month in hard-water areas using a mix of water and white vinegar.\n\nQuestion: How do I clean the kettle, and how often?",
 "Read the notes and answer the question.\n\nNotes: Project Falcon started in March. The design phase ended in May, two weeks late. Testing began in June with a team of four. The launch date moved from August 1 to August 15 because of the design delay.\n\nQuestion: Why was the launch delayed, and by how much?",
 "Based on the passage, answer the question.\n\nPassage: The town's farmers' market runs every Saturday from 8 am to 1 pm in Central Square from April to October. In winter it moves indoors to the community hall and opens only on the first Saturday of each month.\n\nQuestion: Can I buy vegetables at the market on the third Saturday of December?",
 "Using the policy below, answer the employee's question.\n\nPolicy: Employees may work from home up to three days per week. Requests for more days need a manager's written approval. Equipment for home working, such as a monitor or chair, can be claimed up to 300 dollars per year with receipts.\n\nQuestion: Can I buy a 250-dollar chair and work from home four days a week?",
 "Answer using only the table.\n\nTable:\nCity | Population | Area (km²)\nNorthport | 120,000 | 80\nEastvale | 95,000 | 40\nWestbrook | 150,000 | 150\n\nQuestion: Which city is the most densely populated, and roughly how many people live per square kilometre there?",
]

C["code-completion"] = [
 "def is_prime(n: int) -> bool:\n    \"\"\"Return True if n is a prime number.\"\"\"\n",
 "def merge_sorted(a: list[int], b: list[int]) -> list[int]:\n    \"\"\"Merge two sorted lists into one sorted list.\"\"\"\n    result = []\n    i = j = 0\n",
 "class Stack:\n    \"\"\"A last-in, first-out stack.\"\"\"\n\n    def __init__(self):\n        self._items = []\n\n    def push(self, item):\n",
 "import json\nfrom pathlib import Path\n\n\ndef load_config(path: Path) -> dict:\n    \"\"\"Read a JSON config file; return an empty dict when it does not exist.\"\"\"\n",
 "def word_counts(text: str) -> dict[str, int]:\n    \"\"\"Count how often each word occurs in text, ignoring case and punctuation.\"\"\"\n",
 "def parse_duration(text: str) -> int:\n    \"\"\"Parse durations like '1h30m', '45m' or '20s' into seconds.\"\"\"\n    units = {\"h\": 3600, \"m\": 60, \"s\": 1}\n",
]

_EDIT_SRC = [
 ("Rename the variable `data` to `records` everywhere in this function and return the whole function:",
  "def summarize(data):\n    total = 0\n    for item in data:\n        total += item['amount']\n    average = total / len(data) if data else 0\n    largest = max((item['amount'] for item in data), default=0)\n    return {'count': len(data), 'total': total, 'average': average, 'largest': largest}\n"),
 ("Add type hints to every function below and return the whole file:",
  "def area(width, height):\n    return width * height\n\n\ndef perimeter(width, height):\n    return 2 * (width + height)\n\n\ndef is_square(width, height):\n    return width == height\n\n\ndef scale(width, height, factor):\n    return width * factor, height * factor\n"),
 ("Convert these print calls to use the logging module (logger = logging.getLogger(__name__)) and return the whole function:",
  "def sync(files):\n    print('starting sync')\n    for f in files:\n        print('copying', f)\n        copy(f)\n        print('copied', f)\n    print('sync finished,', len(files), 'files')\n"),
 ("Replace the string concatenation with f-strings and return the whole function:",
  "def describe(user):\n    line1 = 'Name: ' + user.name + ' (' + str(user.age) + ')'\n    line2 = 'Email: ' + user.email\n    line3 = 'Member since ' + str(user.joined.year)\n    line4 = 'Orders: ' + str(len(user.orders))\n    return line1 + '\\n' + line2 + '\\n' + line3 + '\\n' + line4\n"),
 ("Add a docstring to each method of this class and return the whole class:",
  "class Account:\n    def __init__(self, owner, balance=0):\n        self.owner = owner\n        self.balance = balance\n\n    def deposit(self, amount):\n        self.balance += amount\n\n    def withdraw(self, amount):\n        if amount > self.balance:\n            raise ValueError('insufficient funds')\n        self.balance -= amount\n\n    def statement(self):\n        return f'{self.owner}: {self.balance}'\n"),
 ("Change every function below to raise ValueError on negative input and return the whole file:",
  "import math\n\n\ndef square_root(x):\n    return math.sqrt(x)\n\n\ndef log_of(x):\n    return math.log(x)\n\n\ndef factorial(n):\n    return math.factorial(n)\n\n\ndef cube_root(x):\n    return x ** (1 / 3)\n"),
]
C["code-editing"] = [f"{task}\n\n```python\n{src}```" for task, src in _EDIT_SRC]

ABOUT = ("SpecScope's workload suite, written for this project (CC0): Spec-Bench's six categories "
         "(multi-turn conversation, translation, summarization, question answering, math reasoning, "
         "retrieval-augmented answers) plus code completion and code editing, the repetitive case "
         "n-gram drafters exploit. Six prompts each. 'chat': send in the target's chat template "
         "where it has one ('messages' holds a multi-turn conversation; 'text' the same as one "
         "plain prompt). Code completion is raw text for the model to continue. Loadable by "
         "specscope bench --prompts workloads.json.")
prompts = []
for cat, items in C.items():
    for i, item in enumerate(items, 1):
        entry = {"name": f"{cat}-{i}", "category": cat, "chat": cat != "code-completion"}
        if isinstance(item, list):
            entry["messages"] = [{"role": r, "content": c} for r, c in item]
            entry["text"] = "\n\n".join(f"{r.capitalize()}: {c}" for r, c in item) + "\n\nAssistant:"
        else:
            entry["text"] = item
        prompts.append(entry)
out = pathlib.Path(__file__).resolve().parents[1] / "resources" / "prompts" / "workloads.json"
out.write_text(json.dumps({"about": ABOUT, "categories": list(C), "prompts": prompts}, indent=1,
                          ensure_ascii=False) + "\n", encoding="utf-8")
print(len(prompts), "prompts")
