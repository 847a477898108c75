"""The tables of the perceived-gender grouping (the zero-shot disparities paper, Sec. 2.2
and Table 1): the groups, the layouts, the group-defining synsets and caption terms, the
concept thresholds and counts the paper reports, and the COCO -> Visual Genome concept
map."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "COCO_MAN_TERMS",
    "COCO_TO_VG",
    "COCO_WOMAN_TERMS",
    "DEFAULT_MIN_IMAGES",
    "GROUPS",
    "IMAGES_WITHOUT_CONCEPTS",
    "LAYOUTS",
    "PAPER_COUNTS",
    "VG_MAN_SYNSETS",
    "VG_WOMAN_SYNSETS",
]

#: The two perceived-gender groups, in the order every report uses (men first, as the
#: paper's differences AP_men - AP_women).
GROUPS: tuple[str, str] = ("men", "women")

#: Data layouts :func:`~contrastkit.evaluators.tasks.zero_shot.groups.load_grouped` reads;
#: ``auto`` picks one by the files present.
LAYOUTS: tuple[str, ...] = ("auto", "vg", "coco")

#: What becomes of a single-group image that shows no kept concept: ``keep`` (the
#: paper's reading: a negative of every concept) or ``drop`` (left out of the analysis).
IMAGES_WITHOUT_CONCEPTS: tuple[str, ...] = ("keep", "drop")

#: Man-related WordNet synsets of Visual Genome (the paper's Table 1).
VG_MAN_SYNSETS: tuple[str, ...] = (
    "man.n.01", "male_child.n.01", "guy.n.01", "male.n.01", "groom.n.01", "husband.n.01",
    "grandfather.n.01", "son.n.01", "boyfriend.n.01", "brother.n.01", "grandson.n.01",
    "groomsman.n.01", "ex-husband.n.01", "uncle.n.01", "godfather.n.01",
)  # fmt: skip

#: Woman-related WordNet synsets of Visual Genome (the paper's Table 1).
VG_WOMAN_SYNSETS: tuple[str, ...] = (
    "maid.n.02", "woman.n.01", "girl.n.01", "lady.n.01", "female.n.01", "mother.n.01",
    "lass.n.01", "ma.n.01", "widow.n.01", "bride.n.01", "daughter.n.01", "grandma.n.01",
    "granddaughter.n.01", "bridesmaid.n.01", "girlfriend.n.01", "sister.n.01", "wife.n.01",
    "female_child.n.01", "white_woman.n.01", "dame.n.01", "matriarch.n.01",
    "mother_figure.n.01", "dame.n.02", "great-aunt.n.01", "donna.n.01",
)  # fmt: skip

#: Man-related caption terms of COCO (the paper's Table 1).
COCO_MAN_TERMS: tuple[str, ...] = (
    "man", "mans", "men", "boy", "boys", "father", "fathers", "son", "sons", "he", "his",
    "him",
)  # fmt: skip

#: Woman-related caption terms of COCO (the paper's Table 1).
COCO_WOMAN_TERMS: tuple[str, ...] = (
    "woman", "womans", "women", "girl", "girls", "lady", "ladies", "mother", "mothers",
    "daughter", "daughters", "she", "her", "hers",
)  # fmt: skip

#: Minimum images per group a concept needs, by layout (the paper's Sec. 2.2).
DEFAULT_MIN_IMAGES: Mapping[str, int] = {"vg": 50, "coco": 100}

#: What the paper reports after filtering (Sec. 2.2), for the reports' comparison.
PAPER_COUNTS: Mapping[str, Mapping[str, int]] = {
    "vg": {"images": 25215, "concepts": 408},
    "coco": {"images": 1412, "concepts": 76},
}

#: COCO category -> Visual Genome synset. The paper picked, for each COCO object, the
#: synset "with the same or similar name" whose definition best matches the object's
#: COCO images, by visual inspection, and did not publish its table; this one is ours,
#: chosen the same way from WordNet definitions. Extend or override it with
#: ``--concept-map FILE`` (:func:`~.coco.read_concept_map`).
COCO_TO_VG: Mapping[str, str] = {
    "person": "person.n.01", "bicycle": "bicycle.n.01", "car": "car.n.01",
    "motorcycle": "motorcycle.n.01", "airplane": "airplane.n.01", "bus": "bus.n.01",
    "train": "train.n.01", "truck": "truck.n.01", "boat": "boat.n.01",
    "traffic light": "traffic_light.n.01", "fire hydrant": "hydrant.n.01",
    "stop sign": "street_sign.n.01", "parking meter": "parking_meter.n.01",
    "bench": "bench.n.01", "bird": "bird.n.01", "cat": "cat.n.01", "dog": "dog.n.01",
    "horse": "horse.n.01", "sheep": "sheep.n.01", "cow": "cow.n.01",
    "elephant": "elephant.n.01", "bear": "bear.n.01", "zebra": "zebra.n.01",
    "giraffe": "giraffe.n.01", "backpack": "backpack.n.01", "umbrella": "umbrella.n.01",
    "handbag": "bag.n.04", "tie": "necktie.n.01", "suitcase": "bag.n.06",
    "frisbee": "frisbee.n.01", "skis": "ski.n.01", "snowboard": "snowboard.n.01",
    "sports ball": "ball.n.01", "kite": "kite.n.03", "baseball bat": "baseball_bat.n.01",
    "baseball glove": "baseball_glove.n.01", "skateboard": "skateboard.n.01",
    "surfboard": "surfboard.n.01", "tennis racket": "tennis_racket.n.01",
    "bottle": "bottle.n.01", "wine glass": "wineglass.n.01", "cup": "cup.n.01",
    "fork": "fork.n.01", "knife": "knife.n.01", "spoon": "spoon.n.01", "bowl": "bowl.n.01",
    "banana": "banana.n.02", "apple": "apple.n.01", "sandwich": "sandwich.n.01",
    "orange": "orange.n.01", "broccoli": "broccoli.n.02", "carrot": "carrot.n.03",
    "hot dog": "hotdog.n.02", "pizza": "pizza.n.01", "donut": "doughnut.n.02",
    "cake": "cake.n.03", "chair": "chair.n.01", "couch": "sofa.n.01",
    "potted plant": "pot.n.04", "bed": "bed.n.01", "dining table": "table.n.02",
    "toilet": "toilet.n.02", "tv": "television_receiver.n.01", "laptop": "laptop.n.01",
    "mouse": "mouse.n.04", "remote": "remote_control.n.01", "keyboard": "keyboard.n.01",
    "cell phone": "cellular_telephone.n.01", "microwave": "microwave.n.02",
    "oven": "oven.n.01", "toaster": "toaster.n.02", "sink": "sink.n.01",
    "refrigerator": "electric_refrigerator.n.01", "book": "book.n.01", "clock": "clock.n.01",
    "vase": "vase.n.01", "scissors": "scissors.n.01", "teddy bear": "teddy.n.01",
    "hair drier": "hand_blower.n.01", "toothbrush": "toothbrush.n.01",
}  # fmt: skip
