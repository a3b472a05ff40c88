"""Word lists for the loopback test site's deterministic prose generator.

Every topic has its own nouns, adjectives, verbs and title subjects, so two articles on
unrelated topics share almost no word shingles, and two articles on the same topic still
differ because sentences are assembled at random from a large shared vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Topic:
    """One subject area: its tag slug, display name and topic-specific vocabulary."""

    slug: str
    name: str
    subjects: tuple[str, ...]
    nouns: tuple[str, ...]
    adjectives: tuple[str, ...]
    verbs: tuple[str, ...]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def _topic(slug: str, name: str, subjects: str, nouns: str, adjectives: str, verbs: str) -> Topic:
    return Topic(
        slug=slug,
        name=name,
        subjects=tuple(s.strip() for s in subjects.split(";") if s.strip()),
        nouns=tuple(nouns.split()),
        adjectives=tuple(adjectives.split()),
        verbs=tuple(verbs.split()),
    )


TOPICS: tuple[Topic, ...] = (
    _topic(
        "coffee",
        "Coffee",
        "espresso extraction; pour-over brewing; cold brew; burr grinders; light roasts;"
        "single-origin beans; milk steaming; water chemistry",
        "bean roast grinder crema portafilter kettle filter barista aroma acidity brew cup "
        "dose tamper roaster origin blend carafe burr espresso crop",
        "bitter fruity roasted floral aromatic smooth syrupy caffeinated",
        "brew grind roast steep tamp pour sip extract",
    ),
    _topic(
        "gardening",
        "Gardening",
        "raised beds; tomato seedlings; compost heaps; drip irrigation; pruning roses;"
        "soil testing; companion planting; winter mulching",
        "seedling compost trowel soil mulch trellis greenhouse seed tuber weed hedge orchard "
        "bulb sprout harvest manure fertilizer hose planter shrub",
        "leafy fertile shady sunny perennial dormant thirsty organic",
        "plant prune water sow weed harvest transplant fertilize",
    ),
    _topic(
        "astronomy",
        "Astronomy",
        "backyard telescopes; lunar eclipses; meteor showers; deep-sky imaging;"
        "star charts; planetary transits; dark-sky parks; variable stars",
        "telescope nebula comet eyepiece orbit planet galaxy eclipse meteor asteroid quasar "
        "mount lens observatory constellation satellite crater horizon star moon",
        "celestial faint distant lunar stellar orbital luminous cosmic",
        "observe orbit track magnify chart photograph align eclipse",
    ),
    _topic(
        "cycling",
        "Cycling",
        "gravel bikes; chain maintenance; tubeless tyres; bike fitting; winter commuting;"
        "carbon frames; saddle comfort; hill climbing",
        "bicycle chain derailleur saddle frame pedal cassette helmet spoke tyre handlebar "
        "crank brake cleat sprocket peloton gear rim commute",
        "aerodynamic rugged lightweight tubeless carbon geared nimble muddy",
        "pedal shift climb descend brake sprint lubricate commute",
    ),
    _topic(
        "baking",
        "Baking",
        "sourdough starters; laminated dough; gluten-free flour; oven spring;"
        "pie crusts; proofing baskets; rye bread; croissant layers",
        "dough flour starter oven crust loaf yeast butter proof whisk rolling pin pastry "
        "croissant gluten crumb scone batter muffin glaze",
        "flaky golden crusty airy buttery tangy doughy caramelized",
        "knead proof bake fold whisk glaze rise score",
    ),
    _topic(
        "photography",
        "Photography",
        "prime lenses; manual exposure; street photography; film scanning;"
        "studio lighting; long exposures; portrait retouching; golden hour",
        "aperture shutter lens sensor tripod exposure flash histogram viewfinder bokeh "
        "negative darkroom filter zoom portrait frame diaphragm softbox",
        "grainy overexposed crisp blurry candid monochrome wide cinematic",
        "shoot frame expose focus develop crop meter bracket",
    ),
    _topic(
        "networking",
        "Home Networking",
        "mesh routers; VLAN segmentation; Wi-Fi channels; network-attached storage;"
        "firewall rules; IPv6 addressing; ethernet cabling; DNS filtering",
        "router switch packet firewall modem cable subnet gateway antenna bandwidth latency "
        "access point port resolver VLAN uplink repeater handshake",
        "wireless wired encrypted congested redundant routable secure flaky",
        "route ping forward encrypt bridge configure resolve throttle",
    ),
    _topic(
        "finance",
        "Personal Finance",
        "index funds; emergency savings; household budgets; retirement accounts;"
        "credit scores; mortgage refinancing; tax deductions; compound interest",
        "budget pension mortgage dividend portfolio bond invoice deposit loan interest "
        "paycheck savings account receipt annuity ledger fund broker",
        "frugal taxable liquid volatile diversified solvent monthly prudent",
        "save invest borrow budget repay allocate deduct compound",
    ),
    _topic(
        "woodworking",
        "Woodworking",
        "dovetail joints; hand planes; wood finishes; workbench design;"
        "table saws; chisel sharpening; hardwood selection; router jigs",
        "chisel plane dovetail lumber workbench mallet clamp veneer grain saw tenon mortise "
        "lathe spokeshave jig sawdust varnish oak walnut",
        "sanded seasoned knotty dovetailed sturdy varnished rustic splintered",
        "carve sand plane clamp chisel glue varnish saw",
    ),
    _topic(
        "birdwatching",
        "Birdwatching",
        "spring migration; wetland birds; binocular optics; backyard feeders;"
        "owl calls; shorebird identification; nesting boxes; bird counts",
        "warbler heron binocular feeder nest plumage wingspan songbird owl sparrow hawk "
        "marsh wader finch egret kestrel birdsong perch",
        "migratory feathered nocturnal elusive speckled colourful territorial shy",
        "migrate nest perch chirp forage spot flock molt",
    ),
    _topic(
        "hiking",
        "Hiking",
        "alpine trails; trekking poles; blister care; ultralight packs;"
        "trail navigation; mountain huts; river crossings; summit days",
        "trail backpack boot summit ridge switchback tent compass map canteen blister "
        "cairn valley pass trailhead pole hut gaiter",
        "steep rocky alpine windswept remote muddy scenic exposed",
        "hike climb trek camp navigate descend ford scramble",
    ),
    _topic(
        "weather",
        "Weather",
        "storm forecasting; barometric pressure; heat waves; cloud types;"
        "rain gauges; jet streams; frost warnings; humidity",
        "cloud barometer forecast storm drizzle gust thunder humidity front cyclone "
        "monsoon hailstone isobar anemometer fog drought",
        "humid gusty overcast stormy drizzly muggy frosty balmy",
        "forecast drizzle gust pour freeze thaw measure warm",
    ),
    _topic(
        "databases",
        "Databases",
        "query planners; index tuning; write-ahead logs; schema migrations;"
        "replication lag; connection pooling; full-text search; vacuuming",
        "query index table schema transaction cursor replica shard tuple column planner "
        "join lock snapshot checkpoint migration partition trigger",
        "relational indexed transactional normalized durable concurrent stale sharded",
        "query index join migrate replicate vacuum commit partition",
    ),
    _topic(
        "transit",
        "Urban Transit",
        "tram networks; bus rapid transit; fare systems; night buses;"
        "metro signalling; bike lanes; station design; timetable planning",
        "tram platform timetable fare turnstile depot carriage junction viaduct commuter "
        "bus stop terminus signal route ticket conductor interchange",
        "punctual crowded electrified suburban accessible frequent elevated overnight",
        "commute board transfer depart terminate schedule ride electrify",
    ),
    _topic(
        "beekeeping",
        "Beekeeping",
        "hive inspections; swarm control; honey extraction; queen rearing;"
        "varroa mites; winter clusters; pollen sources; smoker fuel",
        "hive queen drone comb honey pollen smoker swarm colony frame nectar brood "
        "beeswax apiary veil propolis forager",
        "buzzing waxy sticky docile golden swarming pollinating sweet",
        "forage swarm pollinate extract smoke inspect requeen overwinter",
    ),
    _topic(
        "chess",
        "Chess",
        "opening repertoires; endgame technique; rook endings; blitz tactics;"
        "pawn structures; tournament preparation; the Sicilian defence; time trouble",
        "pawn bishop knight rook queen king gambit opening endgame checkmate tempo "
        "sacrifice castling fianchetto zugzwang tournament clock",
        "positional tactical doubled isolated passed decisive sharp drawish",
        "castle capture promote sacrifice pin fork checkmate resign",
    ),
    _topic(
        "sailing",
        "Sailing",
        "reefing sails; dinghy racing; tidal navigation; knots and lines;"
        "anchoring; heavy-weather sailing; hull maintenance; marinas",
        "mast sail keel rudder tiller halyard jib anchor hull harbour mooring bow stern "
        "spinnaker cleat buoy dinghy galley",
        "windward leeward nautical salty becalmed tidal seaworthy buoyant",
        "sail tack jibe moor anchor reef hoist steer",
    ),
    _topic(
        "pottery",
        "Pottery",
        "wheel throwing; glaze chemistry; kiln firing; hand-built vessels;"
        "stoneware clay; raku techniques; trimming feet; slip decoration",
        "clay kiln glaze wheel slip vessel bisque stoneware porcelain bowl mug kick wheel "
        "trimming tool earthenware raku",
        "glazed earthy fired porous speckled glossy handmade thrown",
        "throw fire glaze trim wedge center burnish sculpt",
    ),
    _topic(
        "running",
        "Running",
        "marathon training; interval sessions; running shoes; trail races;"
        "recovery runs; cadence drills; race nutrition; tempo runs",
        "stride marathon sprint cadence pace shoe finish line interval lap tempo hydration "
        "split blister podium track treadmill",
        "brisk steady aerobic breathless tireless muscular hilly sweaty",
        "sprint jog stretch pace race train recover hydrate",
    ),
    _topic(
        "typography",
        "Typography",
        "serif typefaces; kerning pairs; variable fonts; line length;"
        "web font loading; hanging punctuation; grid systems; display type",
        "typeface serif glyph kerning ligature baseline ascender font leading margin "
        "paragraph column grid italic specimen",
        "legible condensed ornate geometric humanist monospaced bold elegant",
        "kern typeset justify hyphenate align letter render space",
    ),
    _topic(
        "geology",
        "Geology",
        "volcanic eruptions; sedimentary layers; plate tectonics; mineral collecting;"
        "glacial valleys; fossil hunting; earthquake faults; cave formation",
        "volcano magma basalt granite fault fossil sediment crystal lava quartz glacier "
        "canyon boulder mineral tectonic plate stalactite",
        "volcanic molten metamorphic igneous crystalline eroded seismic ancient",
        "erupt erode deposit fracture crystallize uplift subduct weather",
    ),
    _topic(
        "aquariums",
        "Aquariums",
        "planted tanks; nitrogen cycle; reef corals; aquarium filters;"
        "water changes; shrimp colonies; aquascaping; fish quarantine",
        "tank guppy filter coral algae heater substrate shrimp gravel tetra siphon reef "
        "aquascape pump driftwood",
        "brackish planted cloudy tropical freshwater cycled translucent iridescent",
        "cycle siphon quarantine aerate filter dose stock aquascape",
    ),
    _topic(
        "electric-vehicles",
        "Electric Vehicles",
        "battery range; home charging; regenerative braking; charging networks;"
        "heat pumps in cars; battery degradation; towing with EVs; winter range",
        "battery charger inverter motor range plug kilowatt cell charging station "
        "dashboard regen odometer cable wallbox",
        "electric rechargeable silent efficient regenerative quick cold fully-charged",
        "charge drive regenerate precondition plug discharge accelerate tow",
    ),
    _topic(
        "guitar",
        "Guitar",
        "chord voicings; alternate tunings; fingerstyle patterns; guitar setups;"
        "pickup selection; scales and modes; string gauges; practice routines",
        "chord fret string capo pickup amplifier riff scale tuner plectrum neck bridge "
        "arpeggio chorus fingerboard",
        "acoustic distorted melodic strummed resonant harmonic bluesy detuned",
        "strum pick tune bend slide fret improvise practice",
    ),
    _topic(
        "cheese",
        "Cheese Making",
        "cheddar making; rennet choices; cheese caves; washed rinds;"
        "fresh mozzarella; brining; affinage; raw milk",
        "curd whey rennet rind brine cheddar mozzarella cave culture mould press wheel "
        "wax vat affineur",
        "aged creamy pungent crumbly salty ripe mild washed",
        "curdle press age salt ripen brine cut drain",
    ),
    _topic(
        "marine-biology",
        "Marine Biology",
        "kelp forests; coral bleaching; deep-sea vents; whale migrations;"
        "tide pools; plankton blooms; sea turtles; octopus behaviour",
        "kelp octopus plankton whale reef tide pool sea urchin jellyfish anemone "
        "dolphin seal trench current sponge crab",
        "marine abyssal coastal briny bioluminescent tidal pelagic migratory",
        "swim dive bloom migrate feed spawn camouflage filter",
    ),
    _topic(
        "solar",
        "Solar Energy",
        "rooftop panels; home batteries; inverter sizing; net metering;"
        "panel cleaning; off-grid cabins; solar orientation; microinverters",
        "panel inverter battery rooftop array watt meter grid module racking kilowatt-hour "
        "charge controller microinverter shading",
        "photovoltaic off-grid south-facing renewable efficient cloudy peak shaded",
        "generate store export invert mount track meter offset",
    ),
    _topic(
        "roman-history",
        "Roman History",
        "Roman roads; aqueduct engineering; the legions; the Senate;"
        "Roman baths; provincial coinage; Hadrian's Wall; Latin inscriptions",
        "legion aqueduct forum senate consul emperor amphitheatre villa mosaic road "
        "centurion province coin inscription fort",
        "imperial republican ancient provincial marble fortified classical triumphal",
        "conquer govern build march tax legislate fortify inscribe",
    ),
    _topic(
        "knitting",
        "Knitting",
        "sock knitting; colourwork; lace shawls; yarn weights;"
        "cable patterns; blocking; circular needles; sweater fit",
        "yarn needle stitch skein cable purl garter ribbing sleeve gauge shawl swatch "
        "pattern wool mitten",
        "woolly chunky cosy seamless lacy ribbed hand-dyed soft",
        "knit purl cast block felt stitch unravel crochet",
    ),
    _topic(
        "keyboards",
        "Mechanical Keyboards",
        "switch types; keycap profiles; custom firmware; stabilizer tuning;"
        "split keyboards; hot-swap sockets; lubing switches; ergonomic layouts",
        "keycap switch stabilizer firmware layout keyboard socket plate spacebar cable "
        "case foam spring actuation",
        "tactile linear clicky ergonomic hot-swappable split thocky programmable",
        "type lube flash remap solder swap tune click",
    ),
)

KINDS: tuple[str, ...] = ("guides", "reviews", "news", "opinion", "how-to")

GENERIC_NOUNS: tuple[str, ...] = _words(
    """
    approach budget community decision detail experience factor habit idea lesson method
    mistake moment option pattern plan problem process question reason result routine
    schedule season skill solution standard strategy technique trade-off value weekend
    workflow beginner expert newcomer neighbour season afternoon morning evening winter
    summer checklist notebook spreadsheet manual tutorial workshop club forum survey
    measurement estimate guideline shortcut rule exception benchmark baseline outcome
    surprise challenge compromise principle priority routine variable rhythm texture
    balance margin signal noise tradition myth milestone deadline toolkit template
    """
)

GENERIC_ADJECTIVES: tuple[str, ...] = _words(
    """
    careful common consistent costly curious delicate durable early efficient familiar
    flexible fragile generous gentle gradual honest hidden important inexpensive large
    modest narrow obvious occasional patient popular practical predictable quiet rare
    reliable robust simple small steady subtle surprising sustainable thorough tiny
    typical unusual useful vital warm wise awkward bold clever complex crucial decent
    elaborate fresh gradual humble ideal lasting minor neat optional peculiar quick
    sensible solid tidy ambitious overlooked underrated proven seasonal experimental
    """
)

GENERIC_VERBS: tuple[str, ...] = _words(
    """
    adjust affect avoid balance change check choose compare consider create deliver
    depend describe encourage expect explain improve include influence limit maintain
    measure need notice offer prefer prepare prevent produce protect reduce replace
    require reveal support test track transform underestimate value reward simplify
    outlast complicate shape favour tolerate revisit document
    """
)

ADVERBS: tuple[str, ...] = _words(
    """
    carefully quickly slowly rarely often usually gradually surprisingly consistently
    quietly steadily occasionally deliberately reliably noticeably eventually patiently
    routinely predictably dramatically subtly seldom frequently
    """
)

CONNECTORS: tuple[str, ...] = (
    "In practice",
    "As a rule",
    "On the other hand",
    "For most people",
    "In our experience",
    "Over time",
    "At first glance",
    "By contrast",
    "Perhaps surprisingly",
    "In the long run",
    "More often than not",
    "Under pressure",
    "During the first week",
    "According to several readers",
    "Once the basics are in place",
    "With a little patience",
)

TIME_UNITS: tuple[str, ...] = ("day", "week", "month", "season", "year", "afternoon", "session")

FIRST_NAMES: tuple[str, ...] = _words(
    """
    Ada Bruno Carmen Dmitri Elena Farid Greta Hiroshi Ines Jonas Kavya Lars Mei Nadia
    Oscar Priya Quentin Rosa Samir Tamsin Umar Vera Wendell Ximena Yusuf Zofia Amara
    Benedikt Chiara Desmond
    """
)

LAST_NAMES: tuple[str, ...] = _words(
    """
    Abernathy Bellweather Castellano Drummond Eklund Fairbanks Galloway Hartmann Ibarra
    Jablonski Kowalczyk Lindqvist Moreau Nakamura Okafor Petrakis Quintero Rasmussen
    Santoro Tanaka Underwood Valentin Whitcombe Yamamoto Zielinski Achebe Brandt Costa
    """
)

PLACES: tuple[str, ...] = _words(
    """
    Lisbon Tromso Valparaiso Ghent Kyoto Tbilisi Halifax Marrakesh Dunedin Ljubljana
    Bergen Oaxaca Tasmania Galway Bologna Quebec Hobart Krakow Reykjavik Cusco Tallinn
    """
)

TITLE_PATTERNS: tuple[str, ...] = (
    "A practical guide to {s}",
    "Why you should care about {s}",
    "{n} lessons we learned from {s}",
    "Understanding {s}",
    "How to get started with {s}",
    "The hidden costs of {s}",
    "{s}: a beginner's checklist",
    "What nobody tells you about {s}",
    "{s} in {place}: field notes",
    "Ten common mistakes with {s}",
    "{s}: worth the effort?",
    "The science behind {s}",
    "{s} on a budget",
    "Rethinking {s}",
    "A week of {s}",
    "Notes on {s} from {place}",
    "{s}, explained",
    "Choosing the right gear for {s}",
    "An interview about {s}",
    "The quiet revolution in {s}",
)

HEADINGS: tuple[str, ...] = (
    "Why the {n} matters",
    "Getting the {n} right",
    "A closer look at the {n}",
    "Common problems with the {n}",
    "What we tried first",
    "Choosing a {a} {n}",
    "The role of the {n}",
    "Lessons from the {n}",
    "When the {n} fails",
    "Budget and time",
    "How the {n} changes over a {t}",
    "Measuring the {n}",
    "Tools worth owning",
    "Where beginners go wrong",
    "Our verdict",
    "Looking ahead",
    "The {a} option",
    "Frequently asked questions",
)

SENTENCES: tuple[str, ...] = (
    "The {a} {n} {v} the {n2} {adv}.",
    "Most {ns} {vb} a {a} {n} when the {n2} is {a2}.",
    "{C}, a {a} {n} {v} more {ns2} than a {a2} {n2}.",
    "{C}, the {n} of the {n2} {v} {a} {ns}.",
    "Experienced readers note that {ns} {vb} {adv} under {a} conditions.",
    "If the {n} {v} the {n2}, the whole {n3} becomes {a}.",
    "One {a} approach is to {vb} the {n} before the {n2} {v}.",
    "This {v} why {a} {ns} rarely {vb} the {n2}.",
    "A {a} {n} can {vb} {num} {ns2} in a single {t}.",
    "Because {ns} {vb} {adv}, the {n2} {v} {a}.",
    "{name} found that {pct} percent of {ns} {vb} the {n2} within a {t}.",
    "The {n} and the {n2} together {vb} a {a} {n3}.",
    "Nobody expects the {n} to {vb} the {n2} so {adv}.",
    "{C}, we {vb} the {n} every {t} and {vb2} the {n2} {adv}.",
    "There is no {a} {n} that {v} every {n2}.",
    "{name} from {place} {v} a {a} {n} for each {n2}.",
    "You should {vb} the {n} {adv} if the {n2} looks {a}.",
    "Without a {a} {n}, the {n2} {v} {adv}.",
    "The difference between a {a} {n} and a {a2} {n} {v} the {n2}.",
    "We measured {num} {ns} and most of them {vb} the {n2} {adv}.",
    "It is tempting to {vb} the {n}, but the {a} {n2} {v} first.",
    "Over a {t}, a {a} {n} {adv} {v} the {n2} and the {n3}.",
    "Ask any {n} about the {n2} and you will hear about {a} {ns3}.",
    "The {a} {ns} we tested {vb} the {n2} better than {a2} {ns3}.",
)
